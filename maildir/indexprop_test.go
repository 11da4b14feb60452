package maildir_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// The indexes (folder index, thread index, claim cursor) only ever save
// reading: for random sequences of every kind of writer — mailfs's sends,
// marks, archives and claims, a script's drops (renamed in, or written in
// place), git-style replacements by rename, removals, and in-place
// rewrites followed by a change to their folder (the documented limit) —
// the indexed answers equal a full scan's after every step, with the racy
// rules on. Twice: with a short window, so that in one run some folders and
// files are fresh and some have aged past it and both paths are taken; and
// with a window longer than the run, so that every file is fresh and an
// in-place rewrite with no change to its folder must be seen too (a fresh
// file is never vouched for).
func TestIndexesEqualAFullScan(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("short window, seed ", seed), func(t *testing.T) { indexProperty(t, seed, 2*time.Millisecond) })
		t.Run(fmt.Sprint("all fresh, seed ", seed), func(t *testing.T) { indexProperty(t, seed, time.Hour) })
	}
}

func indexProperty(t *testing.T, seed uint64, window time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 0x6d61696c6673))
	ts := newStore(t)
	maildir.SetRacyWindow(ts.Store, window)
	truth := noIndex(t, ts)
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	boxes := []string{"toast", "nux", "mayor"}
	var sent []*maildir.Message // every message mailfs sent, for marks and threads
	scriptN := 0
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	names := func(box string) []string {
		ents, _ := os.ReadDir(ts.path("state/mail/" + box))
		var out []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	script := func(box string, read bool) string {
		scriptN++
		return fmt.Sprintf(`{"body":"b","from":"script","read":%t,"subject":"drop %d","timestamp":"2026-01-02T03:04:%02dZ","to":%q,"thread":"t%d"}`+"\n",
			read, scriptN, scriptN%60, box, scriptN%4)
	}
	ops := []struct {
		name string
		do   func() string
	}{
		{"send", func() string {
			from, to := pick(boxes), pick(boxes)
			m := ts.send(t, from, to, fmt.Sprint("mail ", len(sent)))
			sent = append(sent, m)
			return to
		}},
		{"reply", func() string {
			if len(sent) == 0 {
				return ""
			}
			orig := sent[rng.IntN(len(sent))]
			r, err := ts.ReplyTo(orig, &maildir.Message{From: pick(boxes), Body: "re"})
			if err != nil {
				return "" // the original may have gone
			}
			sent = append(sent, r...)
			return r[0].Box.Name
		}},
		{"mark", func() string {
			box := pick(boxes)
			msgs, _ := truth.List(mbox(box), maildir.ListOptions{All: true})
			if len(msgs) == 0 {
				return ""
			}
			m := msgs[rng.IntN(len(msgs))]
			if m.Read {
				ts.MarkUnread(mbox(box), m.ID)
			} else {
				ts.MarkRead(mbox(box), m.ID)
			}
			return box
		}},
		{"archive", func() string {
			box := pick(boxes)
			msgs, _ := truth.List(mbox(box), maildir.ListOptions{All: true})
			if len(msgs) == 0 {
				return ""
			}
			ts.Archive(mbox(box), []string{msgs[rng.IntN(len(msgs))].ID})
			return box
		}},
		{"script drop, renamed in", func() string {
			box := pick(boxes)
			tmp := filepath.Join(t.TempDir(), "x")
			os.WriteFile(tmp, []byte(script(box, rng.IntN(2) == 0)), 0o600)
			os.MkdirAll(ts.path("state/mail/"+box), 0o700)
			os.Rename(tmp, ts.path(fmt.Sprintf("state/mail/%s/script-%d.json", box, scriptN)))
			return box
		}},
		{"script drop, written in place", func() string {
			box := pick(boxes)
			ts.write(t, fmt.Sprintf("state/mail/%s/inplace-%d.json", box, scriptN+1), script(box, rng.IntN(2) == 0))
			return box
		}},
		{"git replaces a file by rename", func() string {
			box := pick(boxes)
			ns := names(box)
			if len(ns) == 0 {
				return ""
			}
			name := pick(ns)
			data, err := os.ReadFile(ts.path("state/mail/" + box + "/" + name))
			if err != nil {
				return ""
			}
			tmp := ts.path("state/mail/" + box + "/.git-tmp")
			os.WriteFile(tmp, []byte(flipRead(string(data))), 0o600)
			os.Rename(tmp, ts.path("state/mail/"+box+"/"+name))
			return box
		}},
		{"rm", func() string {
			box := pick(boxes)
			ns := names(box)
			if len(ns) == 0 {
				return ""
			}
			os.Remove(ts.path("state/mail/" + box + "/" + pick(ns)))
			return box
		}},
		{"rewrite in place, then a script's drop into its folder", func() string {
			// (A send would not do: its note tells readers what it added
			// without a listing; TestIndexInPlaceRewrite covers that.)
			box := pick(boxes)
			ns := names(box)
			if len(ns) == 0 {
				return ""
			}
			p := ts.path("state/mail/" + box + "/" + pick(ns))
			data, err := os.ReadFile(p)
			if err != nil {
				return ""
			}
			os.WriteFile(p, []byte(flipRead(string(data))), 0o600)
			os.WriteFile(ts.path("state/mail/"+box+"/.drop"), []byte(script(box, false)), 0o600)
			os.Rename(ts.path("state/mail/"+box+"/.drop"), ts.path("state/mail/"+box+fmt.Sprintf("/2026-01-03T00-00-%02dZ-script%d.json", scriptN%60, scriptN)))
			return box
		}},
		{"rewrite in place, nothing else (only while every file is fresh)", func() string {
			box := pick(boxes)
			ns := names(box)
			if window < time.Minute || len(ns) == 0 {
				return ""
			}
			p := ts.path("state/mail/" + box + "/" + pick(ns))
			data, err := os.ReadFile(p)
			if err != nil {
				return ""
			}
			s := flipRead(string(data))
			if len(sent) > 0 && rng.IntN(2) == 0 {
				// Move it into another conversation, too.
				other := sent[rng.IntN(len(sent))]
				if i := strings.Index(s, `"thread": "`); i >= 0 {
					if j := strings.Index(s[i+11:], `"`); j >= 0 {
						s = s[:i+11] + other.Thread + s[i+11+j:]
					}
				}
			}
			os.WriteFile(p, []byte(s), 0o600)
			return box
		}},
		{"queue: send", func() string {
			sendTo(t, ts, "queue:work")
			return ""
		}},
		{"queue: claim, compared with the oldest item", func() string {
			items, _ := truth.List(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, maildir.ListOptions{All: true})
			agent := pick(boxes)
			m, err := ts.Claim(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, mbox(agent))
			if len(items) == 0 {
				if err == nil {
					t.Fatalf("claimed %s from an empty queue", m.ID)
				}
				return ""
			}
			if err != nil || m.ID != items[0].ID {
				t.Fatalf("the claim took %v (%v); the oldest item is %s", m, err, items[0].ID)
			}
			return agent
		}},
	}
	for step := range 120 {
		op := ops[rng.IntN(len(ops))]
		op.do()
		for _, box := range boxes {
			for _, all := range []bool{false, true} {
				got, err1 := ts.List(mbox(box), maildir.ListOptions{All: all})
				want, err2 := truth.List(mbox(box), maildir.ListOptions{All: all})
				if err1 != nil || err2 != nil {
					t.Fatalf("step %d (%s): %v / %v", step, op.name, err1, err2)
				}
				if g, w := summary(got), summary(want); g != w {
					t.Fatalf("step %d (%s), %s all=%v:\nindexed %s\nscan    %s", step, op.name, box, all, g, w)
				}
			}
			gc, _ := ts.Count(mbox(box))
			wc, _ := truth.Count(mbox(box))
			if gc != wc {
				t.Fatalf("step %d (%s), count of %s: indexed %+v, scan %+v", step, op.name, box, gc, wc)
			}
		}
		if len(sent) > 0 {
			id := sent[rng.IntN(len(sent))].ID
			got, err1 := ts.Thread(id)
			want, err2 := truth.Thread(id)
			if (err1 == nil) != (err2 == nil) || summary(got) != summary(want) {
				t.Fatalf("step %d (%s), thread of %s:\nindexed %s (%v)\nscan    %s (%v)", step, op.name, id, summary(got), err1, summary(want), err2)
			}
		}
	}
}

// flipRead turns a message file's "read" the other way (as mailfs writes
// it: sorted keys, indented).
func flipRead(data string) string {
	if s := strings.Replace(data, `"read": false`, `"read": true`, 1); s != data {
		return s
	}
	return strings.Replace(data, `"read": true`, `"read": false`, 1)
}

// summary lists messages by folder, id and read state, in a stable order.
func summary(msgs []*maildir.Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("%s/%s:%v:%v", m.Box, m.ID, m.Read, m.Archived))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
