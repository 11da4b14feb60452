package nudgeq

import (
	"testing"
)

// FuzzParse: a nudge file either fails to parse, or parses to a valid
// nudge that encodes and parses back to itself.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"expires_at":"2026-06-01T12:30:00Z","message":"check your mail","priority":"normal","sender":"mayor","timestamp":"2026-06-01T12:00:00Z"}`))
	f.Add([]byte(`{"expires_at":"2026-06-01T14:00:00Z","mail_id":"x","message":"","priority":"urgent","sender":"w","timestamp":"2026-06-01T12:00:00Z"}`))
	f.Add([]byte(`{"message":"no times","priority":"normal","sender":"m"}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if err != nil {
			return
		}
		if n.Sender == "" || n.Priority != Normal && n.Priority != Urgent || n.Timestamp.IsZero() || n.ExpiresAt.IsZero() {
			t.Fatalf("Parse(%q) accepted %+v", data, n)
		}
		back, err := Parse(n.encode())
		if err != nil {
			t.Fatalf("the re-encoding of %q does not parse: %v", data, err)
		}
		if back.Sender != n.Sender || back.Message != n.Message || back.Priority != n.Priority || back.MailID != n.MailID ||
			!back.Timestamp.Equal(n.Timestamp) || !back.ExpiresAt.Equal(n.ExpiresAt) {
			t.Fatalf("round trip changed %+v into %+v", n, back)
		}
	})
}
