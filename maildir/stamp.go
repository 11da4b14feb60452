package maildir

import "time"

// The stamps that start message file names: UTC, fixed width, ":" written
// as "-" so the names are portable and sort in time order.
const (
	StampLayout      = "2006-01-02T15-04-05.000000000Z"
	ShortStampLayout = "2006-01-02T15-04-05Z"
)

// NewID returns the id mailfs gives a message sent by from at t:
// "<stamp>-<from>", as in 2026-03-05T10-30-00.123456789Z-mayor. When that
// name is taken in the mailbox, [Store.Send] appends "-2", "-3", ….
func NewID(t time.Time, from string) string {
	return t.UTC().Format(StampLayout) + "-" + from
}

// ParseStamp returns the time at the start of a message id or file name, in
// either the full form (nine fraction digits) or the short form scripts may
// use (2026-03-05T10-30-00Z-mayor.json). The stamp must be followed by "-",
// "." or nothing. ok is false when the name does not start with a stamp.
func ParseStamp(name string) (t time.Time, ok bool) {
	for _, layout := range [...]string{StampLayout, ShortStampLayout} {
		n := len(layout)
		if len(name) < n || name[n-1] != 'Z' {
			continue
		}
		if len(name) > n && name[n] != '-' && name[n] != '.' {
			continue
		}
		// time.Parse is lenient (a comma for the dot, signs in the
		// fraction): only a stamp that formats back to itself counts.
		if t, err := time.Parse(layout, name[:n]); err == nil && t.Format(layout) == name[:n] {
			return t, true
		}
	}
	return time.Time{}, false
}
