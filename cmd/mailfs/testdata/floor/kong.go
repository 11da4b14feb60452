//go:build kong

package main

import (
	"time"

	"github.com/alecthomas/kong"
)

// globals are mailfs's global flags.
type globals struct {
	Root    string           `env:"MAILFS_ROOT" placeholder:"DIR" type:"path"`
	Host    string           `env:"MAILFS_HOST" placeholder:"NAME"`
	Version kong.VersionFlag ``
}

// The grammars kong is given for each call: the global flags and the
// command called, as mailfs's are spelt.
type (
	hookCall struct {
		globals
		Hook struct {
			Event    string        `arg:"" enum:"session-start,prompt-submit,post-tool,stop"`
			Agent    string        `arg:"" optional:"" env:"MAILFS_AGENT"`
			Runtime  string        `default:"${hookDefault}" enum:"${hookFormats}"`
			Budget   time.Duration `default:"3s" placeholder:"D"`
			Every    time.Duration `default:"2m" placeholder:"D"`
			MaxBytes int           `name:"max-bytes" default:"9000" placeholder:"N"`
		} `cmd:""`
	}
	checkCall struct {
		globals
		Check struct {
			Agent  string        `arg:"" optional:"" env:"MAILFS_AGENT"`
			Inject bool          `required:""`
			Budget time.Duration `default:"3s" placeholder:"D"`
		} `cmd:""`
	}
	inboxCall struct {
		globals
		Inbox struct {
			Agent    string `arg:"" optional:"" env:"MAILFS_AGENT"`
			All      bool
			Archived bool
			By       string `default:"time" enum:"time,priority"`
			Limit    int    `placeholder:"N"`
			From     string `placeholder:"AGENT"`
			Type     string `placeholder:"TYPE"`
			Only     string `name:"priority" placeholder:"P" enum:",urgent,high,normal,low" default:""`
			Since    string `placeholder:"WHEN"`
			Subject  string `placeholder:"TEXT"`
			Body     string `placeholder:"TEXT"`
			Regexp   bool
			JSON     bool
		} `cmd:""`
	}
	sendCall struct {
		globals
		Send struct {
			To           []string `arg:"" name:"to"`
			Subject      string   `short:"s" required:"" placeholder:"TEXT"`
			Message      []string `short:"m" xor:"body" sep:"none" placeholder:"TEXT"`
			BodyFile     string   `name:"body-file" xor:"body" placeholder:"FILE" type:"path"`
			From         string   `env:"MAILFS_AGENT" placeholder:"AGENT"`
			Type         string   `default:"message"`
			Priority     string   `default:"normal" enum:"urgent,high,normal,low"`
			CC           []string `sep:"," placeholder:"A,B"`
			Thread       string   `placeholder:"ID"`
			ReplyTo      string   `name:"reply-to" placeholder:"ID"`
			Field        []string `sep:"none" placeholder:"KEY=VALUE"`
			Nudge        bool
			JSON         bool
			WaitFor      string         `name:"wait-for" enum:",read,delivered,submitted" default:"" placeholder:"read|delivered|submitted"`
			Timeout      *time.Duration `placeholder:"D"`
			Key          *string        `name:"idempotency-key" placeholder:"KEY"`
			DedupKey     string         `name:"dedup-key" placeholder:"KEY"`
			SupersedeKey string         `name:"supersede-key" placeholder:"KEY"`
			Meta         []string       `sep:"none" placeholder:"KEY=VALUE"`
		} `cmd:""`
	}
)

// parseWithKong parses call, a mailfs command line, with kong and the
// grammar of its command.
func parseWithKong(call []string) {
	grammar := map[string]any{"hook": &hookCall{}, "check": &checkCall{}, "inbox": &inboxCall{}, "send": &sendCall{}}[call[0]]
	parser, err := kong.New(grammar, kong.Name("floor"), kong.Vars{"hookDefault": "claude", "hookFormats": "claude,codex,gemini,qwen,copilot,plain"})
	must(err)
	_, err = parser.Parse(call)
	must(err)
}
