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
		code := Run(args, strings.NewReader(stdin), &out, &errb)
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
}
