package main

import (
	"errors"
	"strconv"

	"github.com/mailfs/mailfs/maildir"
)

type claimCmd struct {
	Queue string `arg:"" help:"The work queue, queue:NAME."`
	As    string `required:"" env:"MAILFS_AGENT" placeholder:"AGENT" help:"The agent that takes the item into its mailbox."`
	jsonFlag
}

func (c *claimCmd) Help() string {
	return `Moves the oldest item waiting in the queue into the agent's mailbox, by
one rename: among any number of claimants running at once, each item goes to
exactly one. Prints the item as show does (or as JSON). An empty queue is an
error (exit status 1), so "while mailfs claim queue:work --as me; do ...;
done" stops when the work runs out. "mailfs release" puts an item back.`
}

func (c *claimCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	m, err := s.Claim(c.Queue, c.As)
	if err != nil {
		return err
	}
	return printOne(a, m, c.JSON)
}

type releaseCmd struct {
	Agent string `arg:"" help:"The mailbox holding the claimed item."`
	ID    string `arg:"" help:"The item: its id, file name, or a unique prefix of the id."`
}

func (c *releaseCmd) Help() string {
	return `Moves an item claimed from a work queue back to that queue, unread, for the
next claimant. Only items that came from a queue can be released.`
}

func (c *releaseCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	_, err = s.Release(c.Agent, c.ID)
	return err
}

type queueCmd struct {
	List queueListCmd `cmd:"" help:"List the work queues with their waiting counts."`
	Show queueShowCmd `cmd:"" help:"List the items waiting in a queue."`
}

func (c *queueCmd) Help() string {
	return `A work queue is a folder, state/queue/<name>/, of messages waiting for a
claimant: "mailfs send queue:NAME ..." adds one, "mailfs claim queue:NAME
--as AGENT" takes the oldest, "mailfs release" puts one back.`
}

type queueListCmd struct {
	jsonFlag
}

func (c *queueListCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	names, err := s.Queues()
	if err != nil {
		return err
	}
	var rows [][]string
	for _, n := range names {
		entries, _, err := s.Entries("queue:"+n, false)
		if err != nil {
			return err
		}
		if c.JSON {
			if err := printValue(a.out, struct {
				Queue   string `json:"queue"`
				Waiting int    `json:"waiting"`
			}{"queue:" + n, len(entries)}); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{"queue:" + n, strconv.Itoa(len(entries))})
	}
	return table(a.out, []string{"QUEUE", "WAITING"}, rows)
}

type queueShowCmd struct {
	Queue string `arg:"" help:"The queue, queue:NAME (the prefix may be left out)."`
	jsonFlag
}

func (c *queueShowCmd) Run(a *app) error {
	q, err := maildir.ParseAddress(c.Queue)
	if err != nil {
		return err
	}
	if q.Kind == maildir.KindAgent {
		q.Kind = maildir.KindQueue // "queue show work" means queue:work
	} else if q.Kind != maildir.KindQueue {
		return errors.New("queue show takes a queue")
	}
	return (&inboxCmd{Agent: q.String(), All: true, By: "time", jsonFlag: c.jsonFlag}).Run(a)
}

type channelCmd struct {
	Create channelCreateCmd `cmd:"" help:"Create a channel, or change its retention."`
	List   channelListCmd   `cmd:"" help:"List the channels with their retention."`
}

func (c *channelCmd) Help() string {
	return `A channel is a folder, state/channel/<name>/, of broadcast posts:
"mailfs send channel:NAME ..." posts, "mailfs inbox channel:NAME" and
"mailfs watch channel:NAME" read it. Its retention, in state/channel/<name>.json,
moves the oldest posts beyond a count, and those older than an age, into
its archive/ after each post and at each full archive sweep.`
}

type channelCreateCmd struct {
	Name        string  `arg:"" help:"The channel (with or without channel:)."`
	RetainCount int     `name:"retain-count" placeholder:"N" help:"Keep at most N posts (0: no limit)."`
	RetainHours float64 `name:"retain-hours" placeholder:"H" help:"Keep posts at most H hours (0: no limit)."`
}

func (c *channelCreateCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	return s.CreateChannel(c.Name, maildir.ChannelConfig{RetainCount: c.RetainCount, RetainHours: c.RetainHours})
}

type channelListCmd struct {
	jsonFlag
}

func (c *channelListCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	names, err := s.Channels()
	if err != nil {
		return err
	}
	var rows [][]string
	for _, n := range names {
		cfg, err := s.Channel(n)
		if err != nil {
			a.exit(err)
			continue
		}
		entries, _, err := s.Entries("channel:"+n, false)
		if err != nil {
			return err
		}
		if c.JSON {
			if err := printValue(a.out, struct {
				Channel string `json:"channel"`
				Posts   int    `json:"posts"`
				maildir.ChannelConfig
			}{"channel:" + n, len(entries), cfg}); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{"channel:" + n, strconv.Itoa(len(entries)), strconv.Itoa(cfg.RetainCount),
			strconv.FormatFloat(cfg.RetainHours, 'g', -1, 64)})
	}
	if c.JSON {
		return nil
	}
	return table(a.out, []string{"CHANNEL", "POSTS", "RETAIN-COUNT", "RETAIN-HOURS"}, rows)
}
