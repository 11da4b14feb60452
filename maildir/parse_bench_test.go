package maildir_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// adversarial returns message files of hostile shapes, each close to the
// 1 MiB limit: what a script (or an attacker) could drop in a mailbox.
func adversarial() map[string][]byte {
	const size = 1 << 20
	var keys strings.Builder
	keys.WriteString(`{"from":"x"`)
	for i := 0; keys.Len() < size-64; i++ {
		fmt.Fprintf(&keys, `,"k%d":1`, i)
	}
	keys.WriteString("}")
	depth := 4000 // below encoding/json's nesting limit, which every reader applies
	nested := `{"from":"x","deep":` + strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth) + "}"
	long := `{"from":"x","body":"` + strings.Repeat("x", size-64) + `"}`
	escapes := `{"from":"x","body":"` + strings.Repeat(`\u00e9\n\"`, (size-64)/14) + `"}`
	array := `{"from":"x","cc":[` + strings.Repeat(`"a",`, (size-64)/4) + `"a"]}`
	return map[string][]byte{
		"keys": []byte(keys.String()), "nesting": []byte(nested), "long-string": []byte(long),
		"escapes": []byte(escapes), "array": []byte(array),
	}
}

// BenchmarkParseAdversarial parses each hostile shape with mailfs's reader
// (which also checks duplicate keys, UTF-8 and the known keys' types) and,
// as the floor, with encoding/json into a map of raw values: the least a
// reader that keeps unknown keys must do. "decoded" is encoding/json
// decoding every value, a named baseline. The README reports the ratios.
func BenchmarkParseAdversarial(b *testing.B) {
	shapes := adversarial()
	for _, name := range []string{"keys", "nesting", "long-string", "escapes", "array"} {
		data := shapes[name]
		b.Run(name+"/mailfs", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := maildir.Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/floor", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		// A named baseline, not a floor: encoding/json decoding every
		// value, as mailfs decodes the known keys (a cc list's strings).
		b.Run(name+"/decoded", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The hostile shapes are messages mailfs reads (or, for a duplicate key,
// refuses), not files that break it.
func TestAdversarialShapesParse(t *testing.T) {
	for name, data := range adversarial() {
		if len(data) > maildir.MaxSize {
			t.Fatalf("%s: %d bytes, over the limit", name, len(data))
		}
		if _, err := maildir.Parse(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	dup := adversarial()["keys"]
	dup = append(dup[:len(dup)-1], `,"k7":2}`...)
	if _, err := maildir.Parse(dup); err == nil || !strings.Contains(err.Error(), `duplicate key "k7"`) {
		t.Fatalf("a duplicate among many keys: %v", err)
	}
}
