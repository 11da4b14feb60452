package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mailfs/mailfs/hook"
)

type demoCmd struct {
	Keep bool `help:"Keep the scratch root afterwards, to look around in it."`
}

func (c *demoCmd) Help() string {
	return `Runs a real mailfs session in a fresh scratch root, printing each command
and its output: a mayor assigns work to two polecats, they read it and
reply, and the mayor follows the thread; two polecats race for the items of
a work queue; an urgent nudge reaches a prompt hook; a search spans every
mailbox and an escalation is raised and acknowledged; a watcher wakes the
moment mail lands; the archive sweep moves old read mail and keeps unread
work; the overseer's web page serves the town and its live feed hears of
new mail; a second machine joins the town through a git remote, and may send
but not change the first machine's mailboxes; a polecat there takes a job
through the town, killed twice on the way, with no item or report doubled. (That last part needs the
git command, and is skipped without it.) Nothing outside the scratch root is touched, and it is removed
afterwards unless --keep is given.`
}

func (c *demoCmd) Run(a *app) error {
	dir, err := os.MkdirTemp("", "mailfs-demo-")
	if err != nil {
		return err
	}
	if !c.Keep {
		defer os.RemoveAll(dir)
	}
	// The hooks keep their state per user; the tour's stays in its scratch
	// folder, so that nothing outside it is touched.
	prev, had := os.LookupEnv(hook.StateEnv)
	os.Setenv(hook.StateEnv, filepath.Join(dir, "hook-state"))
	defer func() {
		if had {
			os.Setenv(hook.StateEnv, prev)
		} else {
			os.Unsetenv(hook.StateEnv)
		}
	}()
	d := &demo{a: a, root: filepath.Join(dir, ".chipset")}
	d.say("mailfs demo: a mayor hands out work, polecats answer and race for queued work, hooks and watchers hear of it.")
	d.say("Each command below really runs, against a scratch root:")
	fmt.Fprintf(a.out, "$ export MAILFS_ROOT=%s\n", d.root)
	d.run("init")
	seeded := d.seedArchivist(filepath.Join(dir, "archive-town", ".chipset")) // in the background, ahead of its act
	defer func() {
		for range seeded { // finished before the scratch folder goes
		}
	}()

	d.say("The town registers its agents, so that a send to a mistyped name stands out.")
	d.run("agent", "add", "mayor", "toast", "nux", "refinery", "witness")

	d.say("The mayor assigns work. Each send is one JSON file, fsynced, renamed into place.")
	toastWork := d.run("send", "toast", "--from", "mayor", "--type", "work_assignment", "--priority", "high",
		"-s", "WORK gt-101: fix the flaky build", "-m", "Branch: polecat/toast/gt-101\nIssue: gt-101\n\nThe integration suite fails one run in five.")
	nuxWork := d.run("send", "nux", "--from", "mayor", "--type", "work_assignment",
		"-s", "WORK gt-102: release notes", "-m", "Issue: gt-102\n\nDraft the notes for v0.3.")

	d.say("Each polecat polls its mailbox, reads its work (marking it read) and replies.")
	d.run("inbox", "toast")
	d.run("read", "toast", toastWork)
	d.run("reply", "toast", toastWork, "-m", "Branch: polecat/toast/gt-101\n\nFixed: a race in the test fixture.")
	d.run("read", "nux", nuxWork[:len(nuxWork)-8]) // a unique prefix of the id is enough
	d.run("reply", "nux", nuxWork, "-m", "Drafted in docs/release-0.3.md.")

	d.say("The mayor sees both replies, then the whole conversation with toast.")
	d.run("inbox", "mayor")
	d.run("thread", toastWork)
	d.run("agents")

	d.queues()
	d.nudges()
	d.hooks()
	d.hookCost(seeded)
	d.town()
	d.watcher()
	d.liveDoorbell()
	d.sweep()
	d.web()
	d.hosts(dir)

	d.say("A message is a plain file: scripts can read it, drop new ones, and git can commit them.")
	if d.err == nil {
		fmt.Fprintf(a.out, "$ cat $MAILFS_ROOT/state/mail/toast/%s.json\n", toastWork)
		data, err := os.ReadFile(filepath.Join(d.root, "state", "mail", "toast", toastWork+".json"))
		if err != nil {
			return err
		}
		a.out.Write(data)
	}
	if c.Keep && d.err == nil {
		d.say("The scratch root is kept: " + d.root)
		fmt.Fprintf(a.out, "# To look at it in a browser: mailfs --root %s serve --as human\n", d.root)
	}
	return d.err
}

// demo runs mailfs commands in-process against a scratch root.
type demo struct {
	a    *app
	root string
	err  error
}

func (d *demo) say(s string) {
	if d.err == nil {
		fmt.Fprintf(d.a.out, "\n# %s\n", s)
	}
}

// run prints and runs one command, and returns its output trimmed.
func (d *demo) run(args ...string) string { return d.runAt(d.root, "", 0, args...) }

// runAt runs a command against root, printed with prefix before
// "mailfs"; it must exit with status want, and a failure's error is
// shown as part of the tour.
func (d *demo) runAt(root, prefix string, want int, args ...string) string {
	if d.err != nil {
		return ""
	}
	var out bytes.Buffer
	quoted := make([]string, len(args))
	for i, arg := range args {
		quoted[i] = shellQuote(arg)
	}
	fmt.Fprintf(d.a.out, "$ %smailfs %s\n", prefix, strings.Join(quoted, " "))
	var errs bytes.Buffer // notes such as "created the mailbox" are not the tour
	io := stdio{in: strings.NewReader(""), out: &out, err: &errs}
	if code := run(d.a.ctx, append([]string{"--root", root}, args...), io); code != want {
		d.a.err.Write(errs.Bytes())
		d.err = fmt.Errorf("demo step %q exited with status %d, not %d", strings.Join(args, " "), code, want)
		if err := d.a.ctx.Err(); err != nil {
			d.err = err // ^C or SIGTERM: the tour was interrupted (130), not broken
		}
	} else if want != 0 {
		d.a.out.Write(errs.Bytes())
	}
	d.a.out.Write(out.Bytes())
	return strings.TrimSpace(out.String())
}

// shellQuote quotes s for bash, with $'…' for text that has newlines.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=@") == "" {
		return s
	}
	if strings.Contains(s, "\n") {
		r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`)
		return "$'" + r.Replace(s) + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
