package town

import (
	"regexp"
	"sync"
)

// packagePrefix is the "maildir: " a library puts before its errors, for
// programs; a person reading "mailfs: error: …" needs it no more. A run of
// them ("mcp: maildir: ") goes whole.
var packagePrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|: )(?:(?:maildir|nudgeq|gitsync|archive|fsck|watch|escalation|setup|hook|webview|mcp): )+`)
})

// UserText is err's text for a person, as every mailfs program prints it
// after "mailfs: error: " or "mailfs: warning: ": without the packages'
// prefixes.
func UserText(err error) string { return packagePrefix().ReplaceAllString(err.Error(), "$1") }
