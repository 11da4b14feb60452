package live

import (
	"encoding/json"
	"errors"
	"github.com/mailfs/mailfs/hook"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The evidence rule over records the real runtimes wrote (live/testdata,
// captured from the tests against them): each record is cut after each of
// its lines, as a deliverer looking while the runtime writes would see
// it, and what the rule says of each doorbell is checked at every cut.

// lines returns testdata file name's lines.
func lines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(string(data), "\n")
	return ls[:len(ls)-1] // after the last newline, nothing
}

// sayOf is what the rule says of one nonce: "seen", "queued" or "".
func sayOf(ev Evidence, n string) string {
	if _, ok := ev.Seen[n]; ok {
		return "seen"
	}
	if ev.Queued[n] {
		return "queued"
	}
	return ""
}

// fileEvidence applies the rule to the first k lines of a record file,
// read as a deliverer reads it: in two looks, the second after the rest
// was appended (so a line cut by a look is joined again).
func fileEvidence(t *testing.T, ls []string, k int, parse func([]byte) (entry, bool), nonces []string) Evidence {
	t.Helper()
	path := filepath.Join(t.TempDir(), "record.jsonl")
	text := strings.Join(ls[:k], "")
	half := len(text) / 2
	if err := os.WriteFile(path, []byte(text[:half]), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &recordFile{growing: growing{path: path}}
	if err := r.more(parse); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.more(parse); err != nil {
		t.Fatal(err)
	}
	return answered(r.entries, nonces)
}

func TestEvidenceFromPiSessionFile(t *testing.T) {
	ls := lines(t, "pi-session.jsonl")
	const wake, busy = "46dce02c757826ea", "db7a424c7f1e67a9"
	// Line 7 is the wake's doorbell (a user entry), 8 the model's answer;
	// 15 the second doorbell, 16 its answer.
	want := map[int][2]string{6: {"", ""}, 7: {"queued", ""}, 8: {"seen", ""}, 14: {"seen", ""}, 15: {"seen", "queued"}, 16: {"seen", "seen"}}
	for k := 1; k <= len(ls); k++ {
		ev := fileEvidence(t, ls, k, piEntry, []string{wake, busy})
		w, ok := want[k]
		if !ok {
			continue
		}
		if got := [2]string{sayOf(ev, wake), sayOf(ev, busy)}; got != w {
			t.Errorf("after line %d: %v, want %v", k, got, w)
		}
	}
	// The answer's time is the answer entry's.
	ev := fileEvidence(t, ls, len(ls), piEntry, []string{busy})
	var last struct{ Timestamp time.Time }
	json.Unmarshal([]byte(ls[15]), &last)
	if !ev.Seen[busy].Equal(last.Timestamp) {
		t.Errorf("seen at %v, want the answer's %v", ev.Seen[busy], last.Timestamp)
	}
	// An answer pi stopped for an error, or aborted, is none.
	for _, reason := range []string{"error", "aborted"} {
		cut := append(append([]string{}, ls[:15]...), strings.Replace(ls[15], `"stopReason":"stop"`, `"stopReason":"`+reason+`"`, 1))
		if got := sayOf(fileEvidence(t, cut, len(cut), piEntry, []string{busy}), busy); got != "queued" {
			t.Errorf("answer stopped for %s: %q, want queued", reason, got)
		}
	}
}

func TestEvidenceFromQwenChatRecord(t *testing.T) {
	ls := lines(t, "qwen-chat.jsonl")
	const bell = "484683b380d16f1c"
	// Line 9 answers the tool call the doorbell waited behind; line 10 is
	// the doorbell joining the conversation; 12 the model's answer.
	want := map[int]string{9: "", 10: "queued", 11: "queued", 12: "seen"}
	for k := 1; k <= len(ls); k++ {
		if w, ok := want[k]; ok {
			if got := sayOf(fileEvidence(t, ls, k, qwenEntry, []string{bell}), bell); got != w {
				t.Errorf("after line %d: %q, want %q", k, got, w)
			}
		}
	}
}

// openCodeEvidence feeds the first k plugin lines through a PipeDoor's
// pipe, as the plugin writes them, and asks the door.
func openCodeEvidence(t *testing.T, ls []string, k int, nonces []string) Evidence {
	t.Helper()
	pr, pw := io.Pipe()
	d := NewPipeDoor("opencode", "ses_test", Process{}, pr, io.Discard)
	for _, l := range ls[:k] {
		if _, err := io.WriteString(pw, strings.TrimSuffix(l, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// A status line after them: once the door took it in, it took in all.
	io.WriteString(pw, `{"type":"status","status":"marker"}`+"\n")
	for {
		if info, _ := d.Session(t.Context()); info.Status == "marker" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	pw.Close()
	ev, err := d.Evidence(t.Context(), nonces)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestEvidenceFromOpenCodeMessages(t *testing.T) {
	ls := lines(t, "opencode-messages.jsonl")
	wake, busy := nonceOf(t, ls[1]), nonceOf(t, ls[3])
	// In the order the plugin passed them on: 2 is the wake's doorbell,
	// 3 its answer; 4 the doorbell taken while a tool call ran, 5 the tool
	// call's own step completing after it (an earlier id: it answered a
	// request without the doorbell), 6 the answer to the doorbell.
	want := map[int][2]string{1: {"", ""}, 2: {"queued", ""}, 3: {"seen", ""}, 4: {"seen", "queued"}, 5: {"seen", "queued"}, 6: {"seen", "seen"}}
	for k := 1; k <= len(ls); k++ {
		ev := openCodeEvidence(t, ls, k, []string{wake, busy})
		if got := [2]string{sayOf(ev, wake), sayOf(ev, busy)}; got != want[k] {
			t.Errorf("after line %d: %v, want %v", k, got, want[k])
		}
	}
	// An answer that failed (the model's endpoint down) is none.
	failed := append(append([]string{}, ls[:5]...), strings.Replace(ls[5], `"error":""`, `"error":"APIError"`, 1))
	if got := sayOf(openCodeEvidence(t, failed, len(failed), []string{busy}), busy); got != "queued" {
		t.Errorf("a failed answer: %q, want queued", got)
	}
	// OpenCode killed with a doorbell queued behind a tool call: the
	// doorbell's message, no answer.
	killed := lines(t, "opencode-killed.jsonl")
	n := nonceOf(t, killed[0])
	if got := sayOf(openCodeEvidence(t, killed, len(killed), []string{n}), n); got != "queued" {
		t.Errorf("killed with a queued doorbell: %q, want queued", got)
	}
}

// nonceOf is the ring mark's nonce in a plugin's message line.
func nonceOf(t *testing.T, line string) string {
	t.Helper()
	var m struct{ Text string }
	json.Unmarshal([]byte(line), &m)
	i := strings.Index(m.Text, "(ring ")
	if i < 0 {
		t.Fatalf("no ring mark in %.200s", line)
	}
	return m.Text[i+6 : i+6+hook.NonceLen]
}

// A pi session file named over the pipe is read by the door; before pi
// wrote it there is no evidence and no error.
func TestPipeDoorReadsTheSessionFileNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	pr, pw := io.Pipe()
	defer pw.Close()
	d := NewPipeDoor("pi", "s", Process{}, pr, io.Discard)
	line, _ := json.Marshal(map[string]string{"type": "record", "path": path})
	pw.Write(append(line, '\n'))
	pw.Write([]byte(`{"type":"status","status":"idle"}` + "\n"))
	for {
		if info, _ := d.Session(t.Context()); info.Status == "idle" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	const n = "46dce02c757826ea"
	if ev, err := d.Evidence(t.Context(), []string{n}); err != nil || sayOf(ev, n) != "" {
		t.Fatalf("before the file: %v %v", ev, err)
	}
	ls := lines(t, "pi-session.jsonl")
	os.WriteFile(path, []byte(strings.Join(ls[:8], "")), 0o600)
	if ev, err := d.Evidence(t.Context(), []string{n}); err != nil || sayOf(ev, n) != "seen" {
		t.Fatalf("after the answer: %v %v", ev, err)
	}
}

// keepEntry leaves out only what cannot change a verdict.
func TestKeepEntry(t *testing.T) {
	var rec []entry
	for _, e := range []entry{{Answer: true}, {}, {Marks: []string{"a"}}, {Answer: true}, {Answer: true}, {Marks: []string{"b"}}} {
		rec = keepEntry(rec, e)
	}
	if len(rec) != 3 {
		t.Fatalf("kept %d entries, want 3: %+v", len(rec), rec)
	}
}

// Qwen Code's door reads the chat record of the session id its registry
// names now, and keeps reading those of earlier ids (/clear, /resume swap
// it): an answer in one record never confirms a doorbell of another, and
// a doorbell in no record yet is queued (Qwen Code queues every peer
// message for the session's next turn).
func TestQwenEvidenceFollowsTheSessionID(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "sessions"), 0o700)
	chats := filepath.Join(home, "projects", "-tmp-t", "chats")
	os.MkdirAll(chats, 0o700)
	pid := os.Getpid()
	register := func(id string) {
		rec, _ := json.Marshal(map[string]any{"schemaVersion": 1, "pid": pid, "sessionId": id, "ipcPath": "/nonexistent"})
		if err := os.WriteFile(filepath.Join(home, "sessions", strconv.Itoa(pid)+".json"), rec, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ls := lines(t, "qwen-chat.jsonl")
	const bell = "484683b380d16f1c"
	// Session a: the doorbell joined its conversation; no answer yet.
	register("a")
	os.WriteFile(filepath.Join(chats, "a.jsonl"), []byte(strings.Join(ls[:10], "")), 0o600)
	d, err := FindQwen(home, pid, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	const other = "0123456789abcdef" // rung, in no record yet
	ev, err := d.Evidence(t.Context(), []string{bell, other})
	if err != nil || sayOf(ev, bell) != "queued" || sayOf(ev, other) != "queued" {
		t.Fatalf("before the answer: %v %v", ev, err)
	}
	// /clear: session b, whose record has an answer of its own (a
	// conversation without the doorbell).
	register("b")
	os.WriteFile(filepath.Join(chats, "b.jsonl"), []byte(ls[0]+ls[4]), 0o600)
	if ev, _ := d.Evidence(t.Context(), []string{bell}); sayOf(ev, bell) != "queued" {
		t.Fatalf("an answer in another session's record confirmed the doorbell: %v", ev)
	}
	// Session a's record gets its answer after all (read on).
	os.WriteFile(filepath.Join(chats, "a.jsonl"), []byte(strings.Join(ls, "")), 0o600)
	if ev, _ := d.Evidence(t.Context(), []string{bell}); sayOf(ev, bell) != "seen" {
		t.Fatalf("the answer in the doorbell's own record: %v", ev)
	}
}

// The ring exchange over the pipe: the plugin's answer to a ring's id ends
// Ring (nil, or the plugin's error); a closed pipe is ErrGone.
func TestPipeDoorRing(t *testing.T) {
	toPlugin, fromDeliverer := io.Pipe()
	fromPlugin, toDeliverer := io.Pipe()
	d := NewPipeDoor("opencode", "ses", Process{}, fromPlugin, fromDeliverer)
	// The plugin: answers ring 1 with success, ring 2 with an error.
	go func() {
		dec := json.NewDecoder(toPlugin)
		for {
			var m struct {
				Type string
				ID   int
				Text string
			}
			if dec.Decode(&m) != nil {
				return
			}
			ans := map[string]any{"type": "rung", "id": m.ID}
			if m.Text == "fail" {
				ans["error"] = "no session"
			}
			line, _ := json.Marshal(ans)
			toDeliverer.Write(append(line, '\n'))
		}
	}()
	if err := d.Ring(t.Context(), "hello"); err != nil {
		t.Fatalf("ring: %v", err)
	}
	if err := d.Ring(t.Context(), "fail"); err == nil || !strings.Contains(err.Error(), "no session") {
		t.Fatalf("ring the plugin failed: %v", err)
	}
	toDeliverer.Close()
	if err := d.Ring(t.Context(), "hello"); !errors.Is(err, ErrGone) {
		t.Fatalf("ring after the pipe closed: %v", err)
	}
	toPlugin.Close()
}
