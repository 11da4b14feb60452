package hook

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestStateFileReadsAsEncodingJSONDoes: the hand-written state file is
// encoding/json's in both directions, for random states: a file
// encoding/json wrote (every earlier mailfs) reads the same by
// decodeState as by json.Unmarshal, and what encodeState writes
// json.Unmarshal and decodeState both read back as the state written.
func TestStateFileReadsAsEncodingJSONDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "toast", "2026-01-02T03-04-05.000000006Z-mayor", `a "quoted" <tag> & \ back`, "é\n\x01"}
	pick := func() string { return words[rng.IntN(len(words))] }
	list := func() []string {
		switch rng.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{pick(), pick()}
	}
	when := func() time.Time {
		if rng.IntN(3) == 0 {
			return time.Time{}
		}
		return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
	}
	for range 2000 {
		st := state{Root: pick(), LastSeen: when(), LastEvent: Event(pick()), LastPostTool: when(), StopBlocks: rng.IntN(5),
			StopBlocked: list(), TurnShown: list(), LastMCP: when(), LastMCPTool: pick()}
		old, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var want state
		if err := json.Unmarshal(old, &want); err != nil {
			t.Fatal(err)
		}
		if got, ok := decodeState(old); !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("encoding/json's file\n%s\nreads as %+v (%v), json.Unmarshal reads %+v", old, got, ok, want)
		}
		written := encodeState(st)
		var back state
		if err := json.Unmarshal(written, &back); err != nil || !reflect.DeepEqual(back, want) {
			t.Fatalf("encodeState wrote\n%s\njson.Unmarshal reads %+v (%v), want %+v", written, back, err, want)
		}
		if got, ok := decodeState(written); !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("encodeState wrote\n%s\ndecodeState reads %+v (%v), want %+v", written, got, ok, want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"stop_blocks": "2"}`, `{"last_seen": "yesterday"}`, `{"root": 7}`, `{"turn_shown": [1]}`, `{"root": "a", "root": "b"}`} {
		if st, ok := decodeState([]byte(bad)); ok {
			t.Errorf("decodeState read %s as %+v", bad, st)
		}
	}
}
