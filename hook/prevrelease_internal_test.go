package hook

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestStateFilesOfThePreviousReleaseRead: hook state files written by the
// releases before (testdata/prevrelease: the one that wrote the file by
// hand, and the one before it, whose encoding/json escaped "<" and "&")
// read as the state they hold, and the hand-written ones are written
// again byte for byte.
func TestStateFilesOfThePreviousReleaseRead(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 123456789, time.UTC)
	for _, c := range []struct {
		file    string
		want    state
		rewrite bool // the file is what encodeState writes today
	}{
		{"hookstate-full.json", state{Root: "/town/<a> & \"b\"/.chipset", LastSeen: at, LastEvent: PostTool, LastPostTool: at.Add(-time.Minute), StopBlocks: 2,
			StopBlocked: []string{"2026-11-20T09-00-00Z-mayor", "é"}, TurnShown: []string{"2026-11-20T09-00-00Z-mayor"}, LastMCP: at.Add(time.Second), LastMCPTool: "mail_inbox"}, true},
		{"hookstate-fresh.json", state{Root: "/town/.chipset", LastSeen: at, LastEvent: SessionStart}, true},
		{"hookstate-escaped.json", state{Root: "/town/<a> & \"b\"/.chipset", LastSeen: at, LastEvent: Stop, StopBlocks: 1, StopBlocked: []string{"x"}}, false},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "prevrelease", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeState(data)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s reads as %+v (%v), want %+v", c.file, got, ok, c.want)
		}
		if again := append(encodeState(c.want), '\n'); c.rewrite && !bytes.Equal(again, data) {
			t.Errorf("%s is written again as\n%s\nnot as before:\n%s", c.file, again, data)
		}
	}
}
