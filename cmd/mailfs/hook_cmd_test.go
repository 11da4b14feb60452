package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mailfs/mailfs/maildir"
)

// runHook runs "mailfs hook" in this process with stdin, and returns its
// stdout and stderr.
func runHook(t *testing.T, root string, stdin io.Reader, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--root", root, "hook"}, args...), stdio{in: stdin, out: &out, err: &errb})
	if code != 0 {
		t.Fatalf("mailfs hook %v: status %d\n%s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

// Each runtime's hook commands, fed the event payloads its documentation
// defines, print at most the bound in bytes as the runtime receives them,
// and under Claude Code's 10,000-character cap, however much waits.
func TestHookOutputBoundedForEveryRuntime(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	payloads := map[string]map[string]string{
		"claude": {
			"session-start": `{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"SessionStart","source":"startup"}`,
			"prompt-submit": `{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/w","permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"go"}`,
			"post-tool":     `{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":""}}`,
			"stop":          `{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"Stop","stop_hook_active":false}`,
		},
		"codex": {
			"session-start": `{"session_id":"c","transcript_path":null,"cwd":"/w","hook_event_name":"SessionStart","model":"gpt-5","permission_mode":"default","source":"startup"}`,
			"prompt-submit": `{"session_id":"c","turn_id":"t","transcript_path":null,"cwd":"/w","hook_event_name":"UserPromptSubmit","model":"gpt-5","permission_mode":"default","prompt":"go"}`,
			"stop":          `{"session_id":"c","turn_id":"t","transcript_path":null,"cwd":"/w","hook_event_name":"Stop","model":"gpt-5","permission_mode":"default","stop_hook_active":false,"last_assistant_message":"done"}`,
		},
		"gemini": {
			"session-start": `{"session_id":"g","transcript_path":"/g.json","cwd":"/w","hook_event_name":"SessionStart","timestamp":"2026-11-24T10:00:00Z","source":"startup"}`,
			"prompt-submit": `{"session_id":"g","transcript_path":"/g.json","cwd":"/w","hook_event_name":"BeforeAgent","timestamp":"2026-11-24T10:00:00Z","prompt":"go"}`,
			"post-tool":     `{"session_id":"g","transcript_path":"/g.json","cwd":"/w","hook_event_name":"AfterTool","timestamp":"2026-11-24T10:00:00Z","tool_name":"run_shell_command","tool_input":{},"tool_response":{}}`,
			"stop":          `{"session_id":"g","transcript_path":"/g.json","cwd":"/w","hook_event_name":"AfterAgent","timestamp":"2026-11-24T10:00:00Z","prompt":"go","prompt_response":"done","stop_hook_active":false}`,
		},
	}
	for rt, events := range payloads {
		t.Run(rt, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), ".chipset")
			heavy := strings.Repeat(`"quoted" \ and <tags> `, 40)
			mailfs := func(args ...string) {
				t.Helper()
				var errb bytes.Buffer
				if code := run(context.Background(), append([]string{"--root", root}, args...), stdio{in: strings.NewReader(""), out: io.Discard, err: &errb}); code != 0 {
					t.Fatalf("mailfs %v: %d %s", args, code, errb.String())
				}
			}
			mailfs("handoff", "toast", "-s", "where things stand", "-m", strings.Repeat("line \"with quotes\" and \\ slashes\n", 500))
			// Subjects far past what send takes (1000 bytes): a script's.
			st, err := maildir.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 12 {
				if _, err := st.Send(&maildir.Message{From: "refinery", To: "toast", Priority: maildir.Urgent, Subject: fmt.Sprint("MERGE_FAILED ", i, " ", strings.Repeat(heavy, 20)), Body: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
			for i := range 20 {
				mailfs("nudge", "toast", fmt.Sprint("n", i, " ", heavy), "--from", "witness")
			}
			// A session: its first turn, then a second whose stop finds
			// pressing mail that turn has not shown (sent during it).
			for _, ev := range []string{"session-start", "prompt-submit", "post-tool", "prompt-submit", "stop"} {
				payload, ok := events[ev]
				if !ok {
					continue
				}
				if ev == "stop" {
					mailfs("send", "toast", "--from", "refinery", "--priority", "urgent", "-s", "MERGE_FAILED late "+heavy, "-m", "x")
				}
				out, _ := runHook(t, root, strings.NewReader(payload), ev, "toast", "--runtime", rt)
				if len(out) > 9000 {
					t.Fatalf("%s %s: %d bytes, over the 9000 bound", rt, ev, len(out))
				}
				if out == "" {
					if ev == "session-start" || ev == "stop" {
						t.Fatalf("%s %s said nothing with urgent mail waiting", rt, ev)
					}
					continue
				}
				var v struct {
					Reason             string
					HookSpecificOutput struct{ AdditionalContext string }
				}
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("%s %s: not JSON: %v\n%s", rt, ev, err, out)
				}
				text := v.Reason + v.HookSpecificOutput.AdditionalContext
				if n := utf8.RuneCountInString(text); n > 10000 || n == 0 {
					t.Fatalf("%s %s: %d characters reach the model", rt, ev, n)
				}
			}
		})
	}
}

// A runtime that never closes stdin costs the hook its budget, not the
// turn: it answers without the event.
func TestHookReadsStdinWithinItsBudget(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := filepath.Join(t.TempDir(), ".chipset")
	r, w := io.Pipe() // never closed while the hook runs
	defer w.Close()
	done := make(chan string, 1)
	go func() {
		_, stderr := runHook(t, root, r, "prompt-submit", "toast", "--budget", "200ms")
		done <- stderr
	}()
	select {
	case stderr := <-done:
		if !strings.Contains(stderr, "stdin was not closed within the 200ms budget") {
			t.Fatalf("stderr: %s", stderr)
		}
	case <-time.After(time.Minute):
		t.Fatal("the hook still waits for stdin a minute later")
	}
}

// An interrupted command says so in words, never "context canceled".
func TestInterruptedSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var errb bytes.Buffer
	a := &app{ctx: ctx, stdio: stdio{in: strings.NewReader(""), out: io.Discard, err: &errb}}
	if code := a.exit(fmt.Errorf("sweeping: %w", context.Canceled)); code != exitInterrupted || strings.Contains(errb.String(), "context canceled") || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("status %d: %s", code, errb.String())
	}
}

// Library errors say what is wrong; the command line adds what to run (an
// MCP client never receives shell advice).
func TestNotHomeHintsAreTheCLIs(t *testing.T) {
	box := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	for _, tc := range []struct {
		err  *maildir.NotHomeError
		hint string
	}{
		{&maildir.NotHomeError{Object: box, Host: "beta"}, "mailfs home claim toast"},
		{&maildir.NotHomeError{Object: box, Home: "alpha"}, "mailfs host NAME"},
		{&maildir.NotHomeError{Object: box, Home: "alpha", Host: "beta"}, "mailfs home move toast --to beta, on alpha"},
	} {
		if strings.Contains(tc.err.Error(), "mailfs ") {
			t.Errorf("the library's error carries a command: %s", tc.err)
		}
		if got := hintFor(fmt.Errorf("mark: %w", tc.err)); !strings.Contains(got, tc.hint) {
			t.Errorf("hint %q, want %q", got, tc.hint)
		}
	}
}
