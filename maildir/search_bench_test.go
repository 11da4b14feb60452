package maildir_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkSearch10k searches 10,000 messages in 10 mailboxes for a word
// 100 of them contain, next to the floor: grep -r -l -i over the same
// files, a process of its own (as "mailfs search" is).
func BenchmarkSearch10k(b *testing.B) {
	ts := newStore(b)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for box := range 10 {
		dir := ts.path(fmt.Sprintf("state/mail/polecat%d", box))
		os.MkdirAll(dir, 0o700)
		for i := range 1000 {
			body := benchBody
			if i%100 == 0 {
				body += "the Needle is here"
			}
			m := &maildir.Message{From: "mayor", To: "x", Subject: fmt.Sprint("WORK ", i), Body: body, Type: "work_assignment",
				Priority: maildir.Normal, Timestamp: base.Add(time.Duration(box*1000 + i))}
			if err := os.WriteFile(filepath.Join(dir, maildir.NewID(m.Timestamp, "mayor")+".json"), m.Encode(), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	m, err := (maildir.Filter{Text: "needle"}).Compile()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("mailfs", func(b *testing.B) {
		for b.Loop() {
			got, err := ts.Search(context.Background(), m, nil, false)
			if err != nil || len(got) != 100 {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		if _, err := exec.LookPath("grep"); err != nil {
			b.Skip("no grep")
		}
		for b.Loop() {
			out, err := exec.Command("grep", "-r", "-l", "-i", "needle", ts.path("state/mail")).Output()
			if err != nil || strings.Count(string(out), "\n") != 100 {
				b.Fatal(err)
			}
		}
	})
}
