package maildir_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// ProtocolFields reads fields only where a protocol message's type puts
// them: a block at the top, or at the end; never from prose, and never
// from a message whose subject names no type.
func TestProtocolFieldsOnlyWhereTheTypePutsThem(t *testing.T) {
	prose := strings.Repeat("We talked it over.\nNote: the build was red this morning\nand then green.\n\n", 40)
	for _, c := range []struct {
		name, subject, body string
		want                [][2]string
	}{
		{"top block", "MERGE_READY toast", "Branch: polecat/toast\nIssue: gt-1\n\nReady when you are.", [][2]string{{"Branch", "polecat/toast"}, {"Issue", "gt-1"}}},
		{"end block", "RECOVERED_BEAD gt-2", "Found it in the wreck.\n\nBead: gt-2\nPolecat: nux", [][2]string{{"Bead", "gt-2"}, {"Polecat", "nux"}}},
		{"prose with key lines", "notes from standup", prose, nil},
		{"a type, fields among prose", "HELP toast", "I am stuck.\nError: cannot rebase\nplease look", nil},
		{"no type", "Merge ready", "Branch: polecat/toast\n\nx", nil},
		{"only fields", "POLECAT_DONE nux", "Exit: COMPLETED\r\nIssue: gt-3\r\n", [][2]string{{"Exit", "COMPLETED"}, {"Issue", "gt-3"}}},
	} {
		m := &maildir.Message{Subject: c.subject, Body: c.body}
		if got := m.ProtocolFields(); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
