package town

import (
	"errors"
	"fmt"
	"testing"
)

// The packages' prefixes go, a run of them whole; other words ending in a
// colon stay.
func TestUserTextDropsPackagePrefixes(t *testing.T) {
	for in, want := range map[string]string{
		`maildir: invalid agent name "x y"`:                      `invalid agent name "x y"`,
		`mcp: maildir: invalid agent name "../etc"`:              `invalid agent name "../etc"`,
		`skipping state/mail/a/b.json: maildir: invalid message`: `skipping state/mail/a/b.json: invalid message`,
		`webview: serving beyond loopback needs a token`:         `serving beyond loopback needs a token`,
		`live claude: maildir: invalid agent name "B"`:           `live claude: invalid agent name "B"`,
		`open state/mail/x: not a directory`:                     `open state/mail/x: not a directory`,
	} {
		if got := UserText(fmt.Errorf("%w", errors.New(in))); got != want {
			t.Errorf("UserText(%q) = %q, want %q", in, got, want)
		}
	}
}
