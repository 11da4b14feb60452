// Command mailfs is filesystem mail for coding agents: see the README, or
// run "mailfs demo" for a tour and "mailfs --help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/alecthomas/kong"
)

type cli struct {
	Root    string           `help:"The mailfs root, the .chipset directory. Default: the nearest .chipset in the working directory or above it, else ./.chipset." env:"MAILFS_ROOT" placeholder:"DIR" type:"path"`
	Host    string           `help:"This host's name, in a town that spans machines (see \"mailfs host\"). Default: the name in the root's runtime/host." env:"MAILFS_HOST" placeholder:"NAME"`
	Version kong.VersionFlag `help:"Print the version (module version and VCS revision) and exit."`
	Man     manFlag          `help:"Print the man page (roff) and exit: mailfs --man > mailfs.1"`

	Init       initCmd       `cmd:"" help:"Create the mail tree and its .gitignore."`
	Send       sendCmd       `cmd:"" brief:"" help:"Deliver a message to one or more agents."`
	Inbox      inboxCmd      `cmd:"" brief:"" help:"List an agent's unread messages, oldest first."`
	Show       showCmd       `cmd:"" brief:"" help:"Print one message without changing it."`
	Read       readCmd       `cmd:"" brief:"" help:"Print one message and mark it read."`
	Take       takeCmd       `cmd:"" brief:"" help:"Print all unread messages with their bodies, then mark them read."`
	Peek       peekCmd       `cmd:"" brief:"" help:"Print the oldest unread message without changing it."`
	MarkRead   markReadCmd   `cmd:"" brief:"" name:"mark-read" help:"Mark messages read."`
	MarkUnread markUnreadCmd `cmd:"" brief:"" name:"mark-unread" help:"Mark messages unread."`
	Reply      replyCmd      `cmd:"" brief:"" help:"Answer a message: to its sender, in its thread."`
	Thread     threadCmd     `cmd:"" help:"Print every message of a conversation, in all mailboxes and archives."`
	Search     searchCmd     `cmd:"" help:"Find messages across mailboxes by text, sender, type, priority and time."`
	Count      countCmd      `cmd:"" brief:"" help:"Count an agent's messages: total and unread."`
	Agents     agentsCmd     `cmd:"" brief:"" help:"List every mailbox with its counts."`
	Agent      agentCmd      `cmd:"" help:"Register agents before their first mail (agent add)."`
	Delete     deleteCmd     `cmd:"" brief:"" help:"Remove messages."`
	Clear      clearCmd      `cmd:"" help:"Archive every message in a mailbox, read or not."`
	Archive    archiveCmd    `cmd:"" help:"Sweep old messages into archive/, or archive named ones now."`
	Restore    restoreCmd    `cmd:"" help:"Move archived messages back into the mailbox."`
	Watch      watchCmd      `cmd:"" help:"Print each new message the moment it lands."`
	Wait       waitCmd       `cmd:"" help:"Block until an agent has unread mail."`
	Group      groupCmd      `cmd:"" help:"Manage groups: named lists of agents that send @name reaches."`
	Claim      claimCmd      `cmd:"" help:"Take the oldest item of a work queue into a mailbox."`
	Release    releaseCmd    `cmd:"" help:"Put a claimed item back in its work queue."`
	Reassign   reassignCmd   `cmd:"" help:"Hand a claimed item over to another agent, with a claim record of its own."`
	Queue      queueCmd      `cmd:"" help:"List work queues and what waits in them."`
	Channel    channelCmd    `cmd:"" help:"Manage broadcast channels and their retention."`
	Nudge      nudgeCmd      `cmd:"" brief:"" help:"Queue a short, ephemeral nudge for an agent."`
	Drain      drainCmd      `cmd:"" brief:"" help:"Claim and print an agent's queued nudges."`
	Check      checkCmd      `cmd:"" brief:"" help:"Summarise unread mail and nudges, or print them for a prompt hook."`
	Hook       hookCmd       `cmd:"" brief:"" help:"Answer an agent runtime's hook event (session-start, prompt-submit, post-tool, stop)."`
	Handoff    handoffCmd    `cmd:"" help:"Leave a note to your next session."`
	DND        dndCmd        `cmd:"" name:"dnd" help:"Do not disturb: hold back normal nudges and reminders (on, off, status)."`
	Audit      auditCmd      `cmd:"" help:"List what people did to others' work from the web view (release, reassign, nudge)."`
	Escalate   escalateCmd   `cmd:"" help:"Escalate a problem by severity, and list, acknowledge or close escalations."`
	MCP        mcpCmd        `cmd:"" name:"mcp" help:"Serve an agent's mail over the Model Context Protocol (stdio)."`
	Setup      setupCmd      `cmd:"" help:"Install mailfs (hooks, MCP server, skill) into agent runtimes' project settings."`
	Doctor     doctorCmd     `cmd:"" help:"Check an agent's mail set-up: root, mailbox, hooks, and whether each runtime will run mailfs."`
	Fsck       fsckCmd       `cmd:"" help:"Check the whole tree, and repair what is safe to repair."`
	Gascity    gascityCmd    `cmd:"" help:"Serve Gas City's exec mail protocol (GC_MAIL=exec:mailfs-gascity)."`
	Serve      serveCmd      `cmd:"" help:"Serve a live web page of the town's mail, for a person (loopback, read only by default)."`
	Sync       syncCmd       `cmd:"" help:"Commit, pull and push the state tree through git, for a town on several machines."`
	Recall     recallCmd     `cmd:"" help:"Bring back archived mail that sync pruned from the working tree."`
	HostName   hostCmd       `cmd:"" name:"host" help:"Print or set this host's name, for a town on several machines."`
	Home       homeCmd       `cmd:"" help:"List, claim or move the home hosts of mailboxes, queues, channels and groups."`
	Live       liveCmd       `cmd:"" help:"Push a doorbell into running agent sessions the moment mail lands (Claude Code, Qwen Code, OpenCode, pi, Codex, tmux), and say whether the model was given it."`
	Demo       demoCmd       `cmd:"" help:"Run a short multi-agent tour in a scratch root."`

	Completion completionCmd `cmd:"" help:"Print the shell code that turns on tab completion (bash, zsh, fish)."`
}

func main() {
	io := stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == "mailfs-gascity" { // the name Gas City is given
		args = append([]string{"gascity"}, args...)
	}
	if isGasCity(args) { // short-lived calls: no signal handling to set up
		os.Exit(runGasCity(args[1:], io))
	}
	ctx, stop := context.Background(), context.CancelFunc(func() {})
	if !isBrief(args) { // long-running commands stop cleanly on ^C
		sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
		// A hangup (the terminal, or the tmux server, a session ran in
		// going away) stops cleanly too, so a deliverer keeps its receipts
		// and leaves no lock; unless it was started under nohup, which
		// asks for the hangup to be ignored.
		if !signal.Ignored(syscall.SIGHUP) {
			sigs = append(sigs, syscall.SIGHUP)
		}
		ctx, stop = signal.NotifyContext(ctx, sigs...)
	}
	code := run(ctx, args, io)
	stop()
	os.Exit(code)
}

// Help is the paragraph "mailfs --help" prints after the summary.
func (c *cli) Help() string { return exitHelp }
