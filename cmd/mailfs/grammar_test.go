package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/cmd/internal/grammar"
)

// Every command kong knows is one the smaller grammar (package grammar)
// can be made of, by the name kong gives it: with its help when the call
// asks for help, without when not, and holding exactly that command and
// every global flag.
func TestEveryCommandHasASmallerGrammar(t *testing.T) {
	parser, err := kong.New(&cli{}, grammarVars())
	if err != nil {
		t.Fatal(err)
	}
	if len(parser.Model.Children) < 30 {
		t.Fatalf("only %d commands", len(parser.Model.Children))
	}
	for _, cmd := range parser.Model.Children {
		for _, help := range []bool{true, false} {
			args := []string{"--root", "/x", cmd.Name}
			if help {
				args = append(args, "--help")
			}
			call := grammar.For(&cli{}, args)
			if call.Full() {
				t.Errorf("%q: the whole grammar", args)
				continue
			}
			small, err := kong.New(call.Grammar(), grammarVars())
			if err != nil {
				t.Fatalf("%q: %v", args, err)
			}
			if len(small.Model.Children) != 1 || small.Model.Children[0].Name != cmd.Name {
				t.Errorf("%q: the grammar holds %d commands", args, len(small.Model.Children))
			}
			if got, want := len(small.Model.Flags), len(parser.Model.Flags); got != want {
				t.Errorf("%q: %d global flags, want %d", args, got, want)
			}
			if got := small.Model.Children[0].Help != ""; got != help {
				t.Errorf("%q: help text %v, want %v", args, got, help)
			}
		}
	}
	for _, args := range [][]string{nil, {"--help"}, {"--version"}, {"sned"}, {"--root", "/x"}, {"-h", "send"}} {
		if call := grammar.For(&cli{}, args); !call.Full() {
			t.Errorf("%q: selected one command, want the full grammar", args)
		}
	}
}

// A call through the one-command grammar behaves as through the full one:
// the same output, the same status, the global flags applied.
func TestOneCommandGrammarBehavesAsTheFull(t *testing.T) {
	root := t.TempDir() + "/.chipset"
	call := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errs})
		return code, out.String(), errs.String()
	}
	if code, _, errs := call("--root", root, "send", "toast", "--from", "mayor", "-s", "hi", "-m", "there"); code != 0 {
		t.Fatalf("send: %d %s", code, errs)
	}
	if code, out, _ := call("--root="+root, "inbox", "toast"); code != 0 || !strings.Contains(out, "hi") {
		t.Fatalf("inbox through --root=: %d %q", code, out)
	}
	if code, _, errs := call("--root", root, "inbox", "toast", "--frm", "x"); code != exitUsage || !strings.Contains(errs, `did you mean "--from"`) {
		t.Fatalf("a mistyped flag: %d %q", code, errs)
	}
	if code, out, _ := call("send", "--help"); code != 0 || !strings.Contains(out, "Usage: mailfs send") || !strings.Contains(out, "takes --root DIR and --host NAME") || strings.Contains(out, "--root=DIR") {
		t.Fatalf("send --help: %d %q", code, out)
	}
	if code, _, errs := call("--root", root, "send", "--from", "mayor", "-m", "x"); code != exitUsage || !strings.Contains(errs, "missing flags: --subject=TEXT\n") {
		t.Fatalf("a missing flag: %d %q", code, errs)
	}
	if grammar.For(&cli{}, []string{"inbox"}).Full() {
		t.Fatal("the full grammar was selected")
	}
}

// Without its helper binary beside it or on $PATH, "mailfs mcp" and
// "mailfs serve" say how to get it, and fail as an error.
func TestHelpersNeedTheirBinaries(t *testing.T) {
	t.Setenv("PATH", "")
	for _, c := range [][]string{{"mcp", "--agent", "toast", "mailfs-mcp"}, {"serve", "mailfs-serve"}} {
		var out, errs bytes.Buffer
		args := append([]string{"--root", t.TempDir()}, c[:len(c)-1]...)
		code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errs})
		if code != exitError || !strings.Contains(errs.String(), c[len(c)-1]+`, is neither beside this mailfs nor on $PATH`) ||
			!strings.Contains(errs.String(), `mailfs: hint: install it with "CGO_ENABLED=0 go install ./cmd/..."`) || out.Len() != 0 {
			t.Fatalf("%s: status %d, stdout %q, stderr %q", c[0], code, out.String(), errs.String())
		}
	}
}

func TestBriefCommands(t *testing.T) {
	for args, want := range map[string]bool{
		"send toast -m hi":                   true,
		"--root /x inbox":                    true,
		"--root=/x hook prompt-submit toast": true,
		"send toast -m hi --wait-for read":   false,
		"send toast -m hi --wait-for=read":   false,
		"watch toast":                        false,
		"archive --every 1h":                 false,
		"mcp --agent toast":                  false,
		"--help":                             false,
		"":                                   false,
	} {
		if got := isBrief(strings.Fields(args)); got != want {
			t.Errorf("%q: brief %v, want %v", args, got, want)
		}
	}
}

// failWriter fails every write, as a closed pipe does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A brief command's output is buffered and written at the end; a failure
// to write it is an error, and what must be shown before it is acted on
// (take marks what it printed, drain removes what it printed) is written
// first: a reader whose output was lost keeps its mail and nudges.
func TestBufferedOutputFailsLoudly(t *testing.T) {
	root := t.TempDir() + "/.chipset"
	call := func(out io.Writer, args ...string) (int, string) {
		var errs bytes.Buffer
		code := run(context.Background(), append([]string{"--root", root}, args...), stdio{in: strings.NewReader(""), out: out, err: &errs})
		return code, errs.String()
	}
	var sink bytes.Buffer
	for range 3 {
		if code, errs := call(&sink, "send", "toast", "--from", "mayor", "-s", "hi", "-m", "there"); code != 0 {
			t.Fatalf("send: %d %s", code, errs)
		}
	}
	if code, errs := call(&sink, "nudge", "toast", "look", "--from", "mayor"); code != 0 {
		t.Fatalf("nudge: %d %s", code, errs)
	}
	if code, errs := call(failWriter{}, "inbox", "toast"); code != exitError || !strings.Contains(errs, "broken pipe") {
		t.Fatalf("inbox into a broken pipe: %d %q", code, errs)
	}
	if code, errs := call(failWriter{}, "take", "toast"); code != exitError || !strings.Contains(errs, "broken pipe") {
		t.Fatalf("take into a broken pipe: %d %q", code, errs)
	}
	if code, errs := call(failWriter{}, "drain", "toast"); code != exitError || !strings.Contains(errs, "broken pipe") {
		t.Fatalf("drain into a broken pipe: %d %q", code, errs)
	}
	var out bytes.Buffer
	if code, errs := call(&out, "count", "toast", "--json"); code != 0 || !strings.Contains(out.String(), `"unread":3`) {
		t.Fatalf("take marked what it could not show: %d %s %s", code, out.String(), errs)
	}
	out.Reset()
	if code, errs := call(&out, "take", "toast"); code != 0 || strings.Count(out.String(), "there") != 3 {
		t.Fatalf("take: %d %q %s", code, out.String(), errs)
	}
	out.Reset()
	if code, errs := call(&out, "drain", "toast"); code != 0 || !strings.Contains(out.String(), "look") {
		t.Fatalf("drain after a failed one: %d %q %s", code, out.String(), errs)
	}
}

// The man page has a proper heading (name, section, date, source, manual),
// a description, each command's help as paragraphs, and the exit statuses.
func TestManPage(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"--man"}, stdio{in: strings.NewReader(""), out: &out, err: &errs}); code != 0 {
		t.Fatalf("--man: %d %s", code, errs.String())
	}
	page := out.String()
	first, _, _ := strings.Cut(page, "\n")
	if !regexp.MustCompile(`^\.TH MAILFS 1 "\d{4}-\d\d-\d\d" "mailfs [^"]+" "mailfs manual"$`).MatchString(first) {
		t.Fatalf("heading %q", first)
	}
	for _, want := range []string{".SH DESCRIPTION\nmailfs keeps the mail", "124: timeout: wait --timeout with no mail in time, send --wait-for with a copy still unread, submitted, rung, held or refused, claim --timeout with another host's queue not answering yet\\&.", "1: \"no\", or nothing there, from a command that fetches or tests: check with nothing to say, take,",
		"Exit status 1, with nothing on stdout, when the queue is empty; 2 when the queue does not exist or anything else fails\\&. A worker"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Each entry's name is a tag of its own, its help below it; a table
	// in the help is one block kept as typed, not a paragraph per line.
	if m := regexp.MustCompile(`(?m)^\\fB(?:[^\\\n]|\\&)*\\fP\S.*$`).FindString(page); m != "" {
		t.Errorf("an entry's name runs into its text: %.80q", m)
	}
	for _, entry := range []string{".TP\n\\fBagents [flags]\\fP\nList every mailbox", ".TP\n\\fBagent add <agent> \\&.\\&.\\&.\\fP\nRegister agents"} {
		if !strings.Contains(page, entry) {
			t.Errorf("the page lacks the entry %q", entry)
		}
	}
	table := regexp.MustCompile(`\.nf\n  delivered  [^\n]*\n {13}input held the doorbell[^\n]*\n  submitted `)
	if !table.MatchString(page) {
		t.Error("send's table of receipts is not one block of lines")
	}
	if strings.Contains(page, ".PP\n.PP") {
		t.Error("the page holds empty paragraphs")
	}
}

// docs/mailfs.1 is the man page of the code as it is: regenerate it with
// go test ./cmd/mailfs -run TestManPageIsCurrent -update. (The heading's
// date and version are not compared.)
func TestManPageIsCurrent(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--man"}, stdio{in: strings.NewReader(""), out: &out, err: io.Discard}); code != 0 {
		t.Fatalf("--man: status %d", code)
	}
	path := filepath.Join("..", "..", "docs", "mailfs.1")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body := func(page []byte) string {
		_, rest, _ := strings.Cut(string(page), "\n") // past .TH
		return rest
	}
	if body(file) != body(out.Bytes()) {
		t.Fatal("docs/mailfs.1 is not the man page of this code: go test ./cmd/mailfs -run TestManPageIsCurrent -update")
	}
	// Help text goes through roff's formatting: a "%" it took for a verb
	// shows as "%!v(MISSING)" and the like.
	if i := bytes.Index(out.Bytes(), []byte("%!")); i >= 0 {
		t.Errorf("the man page holds a formatting error: %q", out.Bytes()[max(0, i-40):min(out.Len(), i+40)])
	}
}
