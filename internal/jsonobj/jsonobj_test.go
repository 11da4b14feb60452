package jsonobj

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzMembers: for any data, Members either refuses it or agrees with
// encoding/json: the same keys, each value equal to json's reading of it;
// and it refuses what json refuses, anything but an object, and
// duplicate keys.
func FuzzMembers(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a": 1, "b": [1, "x"], "c": {"d": null}}`, `{"a":"\u00e9\n","a":2}`, `[1]`, `{"a": "<&>"}`, " {\"s\": \"x\\\"y\"} "} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Members(data)
		var want map[string]any
		jerr := json.Unmarshal(data, &want)
		if err != nil {
			return // refusing is always allowed; json may accept duplicates
		}
		if jerr != nil {
			t.Fatalf("Members read %q, which json refuses: %v", data, jerr)
		}
		got := map[string]any{}
		for _, m := range ms {
			if _, dup := got[m.Key]; dup {
				t.Fatalf("Members returned key %q twice", m.Key)
			}
			var v any
			if err := json.Unmarshal(m.Raw, &v); err != nil {
				t.Fatalf("value of %q, %q, is not JSON on its own", m.Key, m.Raw)
			}
			got[m.Key] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Members read %v, json %v", got, want)
		}
	})
}

// TestStringsAndString agree with encoding/json.
func TestStringsAndString(t *testing.T) {
	for _, raw := range []string{`"plain"`, `"a\"b\\c\u00e9\n"`, `""`} {
		var want string
		json.Unmarshal([]byte(raw), &want)
		if got, err := String([]byte(raw)); err != nil || got != want {
			t.Errorf("String(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for raw, want := range map[string][]string{`[]`: {}, `["a", "b\"c"]`: {"a", `b"c`}, ` [ "x" ] `[1:]: {"x"}} {
		if got, ok := Strings([]byte(raw)); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Strings(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`[1]`, `["a", null]`, `{}`, `null`} {
		if _, ok := Strings([]byte(raw)); ok {
			t.Errorf("Strings(%s) read it as strings", raw)
		}
	}
	for _, s := range []string{"plain", "<a & b>", "quote \" back \\ nl \n é \x01"} {
		var back string
		if err := json.Unmarshal(AppendString(nil, s), &back); err != nil || back != s {
			t.Errorf("AppendString(%q) = %s, reads back as %q (%v)", s, AppendString(nil, s), back, err)
		}
	}
}
