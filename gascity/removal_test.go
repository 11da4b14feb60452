package gascity

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Removed means gone, as today's Gas City requires of a mail provider:
// after archive or delete a message is not found by get, read, reply,
// mark-read or mark-unread — exactly as an id nobody sent — and the exec
// provider is told so by the marker on stderr, which it maps to
// mail.ErrNotFound (gascity internal/mail/exec/exec.go,
// messageNotFoundMarker and normalizeMessageError; the contract is
// runRemovalVisibilityContract in internal/mail/mailtest/conformance.go,
// read at zookanalytics/gascity 9e89da7c7, which carries upstream's
// ed267ad66). A reply to a removed message creates nothing, so its
// thread does not grow; a live message answers every op.
func TestRemovedMeansGone(t *testing.T) {
	t.Setenv("MAILFS_ROOT", filepath.Join(t.TempDir(), ".chipset"))
	call := func(stdin string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Run(args, strings.NewReader(stdin), &out, &errb, openTown)
		return out.String(), errb.String(), code
	}
	send := func(subject string) string {
		t.Helper()
		out, errs, code := call(`{"from":"alice","subject":"`+subject+`","body":"b"}`, "send", "bob")
		var m gcMessage
		if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
			t.Fatalf("send: %d %s %s", code, out, errs)
		}
		return m.ID
	}
	ids := map[string]string{"live": send("live"), "archived": send("archived"), "deleted": send("deleted"), "unknown": "2099-01-01T00-00-00.000000000Z-nobody"}
	for state, op := range map[string]string{"archived": "archive", "deleted": "delete"} {
		if _, errs, code := call("", op, ids[state]); code != 0 {
			t.Fatalf("%s: %d %s", op, code, errs)
		}
	}
	reply := `{"from":"bob","subject":"RE","body":"r"}`
	for _, op := range []string{"get", "read", "mark-read", "mark-unread", "reply"} {
		for _, state := range []string{"live", "archived", "deleted", "unknown"} {
			t.Run(op+"/"+state, func(t *testing.T) {
				out, errs, code := call(reply, op, ids[state])
				if state == "live" {
					if code != 0 || strings.Contains(errs, "gc-mail-error") {
						t.Fatalf("exit %d, stderr %q", code, errs)
					}
					return
				}
				if code != 1 || !strings.Contains(errs, "gc-mail-error:not-found") || out != "" {
					t.Fatalf("exit %d, stdout %q, stderr %q; want 1, nothing, the not-found marker", code, out, errs)
				}
			})
		}
	}
	// No reply was made to a removed message: bob's sends are the one
	// reply to the live message.
	out, _, _ := call("", "all", "alice")
	if n := strings.Count(out, `"id"`); n != 1 {
		t.Fatalf("alice holds %d replies, want 1 (to the live message): %s", n, out)
	}
	// archive and delete: a live message goes; a removed one is "already
	// archived" (Gas City's ErrAlreadyArchived); an unknown id fails.
	for _, op := range []string{"archive", "delete"} {
		fresh := send("fresh for " + op)
		for _, c := range []struct {
			state, id, stderr string
			code              int
		}{
			{"live", fresh, "", 0},
			{"archived", ids["archived"], "already archived", 1},
			{"deleted", ids["deleted"], "already archived", 1},
			{"unknown", ids["unknown"], "", 1},
		} {
			_, errs, code := call("", op, c.id)
			if code != c.code || !strings.Contains(errs, c.stderr) {
				t.Errorf("%s/%s: exit %d, stderr %q; want %d and %q", op, c.state, code, errs, c.code, c.stderr)
			}
		}
	}
	// Every view leaves removed mail out (runRemovalVisibilityContract's
	// inbox, check, all, count and thread).
	for _, op := range []string{"inbox", "check", "all"} {
		out, _, _ := call("", op, "bob")
		for _, state := range []string{"archived", "deleted"} {
			if strings.Contains(out, ids[state]) {
				t.Errorf("%s shows the %s message", op, state)
			}
		}
		if !strings.Contains(out, ids["live"]) {
			t.Errorf("%s lost the live message", op)
		}
	}
	if out, _, _ := call("", "count", "bob"); !strings.Contains(out, `"total":1`) {
		t.Errorf("count after removals: %s, want the live message alone", out)
	}
	for _, state := range []string{"archived", "deleted"} {
		if out, _, _ := call("", "thread", ids[state]); strings.Contains(out, ids[state]) {
			t.Errorf("thread of the %s message shows it: %s", state, out)
		}
	}
}
