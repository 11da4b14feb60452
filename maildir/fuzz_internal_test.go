package maildir

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"unicode/utf8"
)

// FuzzMarkReadRewrite checks the package's own scanner and the mark-read
// rewrite against encoding/json's reading of the same bytes (the oracle):
// decode accepts exactly the files that are one JSON object in valid UTF-8
// with distinct keys (and known keys of the right type); its members are
// the ones encoding/json sees; and the rewrite changes nothing but "read",
// every other value keeping its bytes.
func FuzzMarkReadRewrite(f *testing.F) {
	f.Add([]byte(`{"from":"a","to":"b","subject":"s","body":"b","read":false}`))
	f.Add([]byte(`{"z": 12.500, "x-meta": {"n": [1, 2, {"k": "\u00e9"}]}, "from": "cron"}`))
	f.Add([]byte("{\n  \"body\": \"<b> & \\u2028\",\n  \"cc\": [\n    \"x\"\n  ],\n  \"read\": true\n}\n"))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"a":1} {}`))
	f.Add([]byte(`{"claim":{"agent":"t","at":"x","queue":"queue:w"},"cc":["a",  "b"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, oracleErr := oracleMembers(data)
		m, fields, err := decode(data)
		if oracleErr != nil {
			if err == nil {
				t.Fatalf("decode accepted %q, which encoding/json refuses: %v", data, oracleErr)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidMessage) || !knownKeyOfWrongType(want) {
				t.Fatalf("decode refused %q, which encoding/json reads as an object: %v", data, err)
			}
			return
		}
		if got := membersOf(t, fields); !sameMembers(got, want) {
			t.Fatalf("the scanner read %q as %q; encoding/json reads %q", data, got, want)
		}
		for _, read := range []bool{true, false} {
			out := withRead(fields, read)
			after, err := oracleMembers(out)
			if err != nil {
				t.Fatalf("the rewrite of %q is not a JSON object to encoding/json: %v\n%s", data, err, out)
			}
			m2, _, err := decode(out)
			if err != nil || m2.Read != read {
				t.Fatalf("the rewrite of %q decodes as %+v, %v; want read %v", data, m2, err, read)
			}
			for k, v := range want {
				if k != "read" && !bytes.Equal(after[k], v) {
					t.Fatalf("key %q changed: %q became %q", k, v, after[k])
				}
			}
			if len(after) != len(want) && !(len(after) == len(want)+1 && want["read"] == nil) {
				t.Fatalf("keys changed: %d became %d", len(want), len(after))
			}
			m2.Read = m.Read
			if !bytes.Equal(m2.Encode(), m.Encode()) {
				t.Fatalf("the message changed beyond read:\n%s\n%s", m.Encode(), m2.Encode())
			}
			if _, fields2, _ := decode(out); !bytes.Equal(withRead(fields2, read), out) {
				t.Fatalf("the rewrite is not canonical: rewriting it again changes it")
			}
		}
	})
}

// oracleMembers reads data as encoding/json does: one top-level object,
// each member's value as its exact bytes. It refuses what mailfs must
// refuse: not an object, trailing data, duplicate keys, invalid UTF-8.
func oracleMembers(data []byte) (map[string][]byte, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	out := map[string][]byte{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		if _, dup := out[key]; dup {
			return nil, errors.New("duplicate key")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return out, nil
}

// membersOf maps the scanner's fields, each value compacted as
// json.RawMessage decoding would leave it, to compare with the oracle.
func membersOf(t *testing.T, fields []field) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range fields {
		var raw json.RawMessage
		if err := json.Unmarshal(f.Raw, &raw); err != nil {
			t.Fatalf("value of %q is not JSON on its own: %q", f.Key, f.Raw)
		}
		out[f.Key] = f.Raw
	}
	return out
}

func sameMembers(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// knownKeyOfWrongType reports whether a known key holds a value of a type
// mailfs refuses for it: the one reason to refuse a valid object.
func knownKeyOfWrongType(members map[string][]byte) bool {
	for k, v := range members {
		if !knownKey(k) || string(v) == "null" {
			continue
		}
		var f field
		f.Key, f.Raw = k, v
		if (&Message{}).set(f) != nil {
			return true
		}
	}
	return false
}

// withRead returns the file for fields with "read" set, as a mark
// rewrites it: sorted keys, every other value byte for byte as it was.
func withRead(fields []field, read bool) []byte {
	return encodeObject(setField(fields, "read", marshalValue(read)))
}
