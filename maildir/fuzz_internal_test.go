package maildir

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMarkReadRewrite: any file that decodes as a message can be marked
// read, and the rewrite changes nothing but "read": every other key keeps
// its value byte for byte, and the result decodes to the same message.
func FuzzMarkReadRewrite(f *testing.F) {
	f.Add([]byte(`{"from":"a","to":"b","subject":"s","body":"b","read":false}`))
	f.Add([]byte(`{"z": 12.500, "x-meta": {"n": [1, 2, {"k": "\u00e9"}]}, "from": "cron"}`))
	f.Add([]byte("{\n  \"body\": \"<b> & \\u2028\",\n  \"cc\": [\n    \"x\"\n  ],\n  \"read\": true\n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, fields, err := decode(data)
		if err != nil {
			return
		}
		for _, read := range []bool{true, false} {
			out := withRead(fields, read)
			m2, fields2, err := decode(out)
			if err != nil {
				t.Fatalf("the rewrite of %q does not decode: %v\n%s", data, err, out)
			}
			if m2.Read != read {
				t.Fatalf("read is %v after setting %v", m2.Read, read)
			}
			before := rawValues(t, fields)
			after := rawValues(t, fields2)
			for k, v := range before {
				if k != "read" && !bytes.Equal(after[k], v) {
					t.Fatalf("key %q changed: %q became %q", k, v, after[k])
				}
			}
			if len(after) != len(before) && !(len(after) == len(before)+1 && before["read"] == nil) {
				t.Fatalf("keys changed: %d became %d", len(before), len(after))
			}
			m2.Read = m.Read
			if !bytes.Equal(m2.Encode(), m.Encode()) {
				t.Fatalf("the message changed beyond read:\n%s\n%s", m.Encode(), m2.Encode())
			}
			// And the rewrite is canonical: rewriting it again changes nothing.
			if again := withRead(fields2, read); !bytes.Equal(again, out) {
				t.Fatalf("not idempotent:\n%s\n%s", out, again)
			}
		}
	})
}

// rawValues maps each key to its value's bytes, as encoding/json reads
// them: an independent check on the package's own scanner.
func rawValues(t *testing.T, fields []field) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range fields {
		var raw json.RawMessage
		if err := json.Unmarshal(f.raw, &raw); err != nil {
			t.Fatalf("value of %q is not JSON on its own: %q", f.key, f.raw)
		}
		out[f.key] = f.raw
	}
	return out
}
