package maildir_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// childTorture is one writer of TestFsckRepairBesideKilledWriters: it
// does random work on $ROOT for ever (sends, archives and restores, marks,
// claims and releases), printing "S <id>" once a send has returned; with
// $FALLBACK set, through the rename fallbacks (link, then unlink), whose
// cut-short moves are what fsck repairs. With $ROLE=fsck it runs
// fsck --repair in a loop instead.
func childTorture() {
	root := os.Getenv("ROOT")
	if os.Getenv("ROLE") == "fsck" {
		for {
			if _, err := fsck.Check(context.Background(), root, fsck.Options{Repair: true}); err != nil {
				fmt.Fprintln(os.Stderr, "fsck:", err)
				os.Exit(1)
			}
			fmt.Println("F")
		}
	}
	var opts []durable.Option
	if os.Getenv("FALLBACK") != "" {
		opts = append(opts, durable.WithFallback())
	}
	s, err := maildir.OpenWith(root, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s.Warn = func(error) {}
	out := bufio.NewWriter(os.Stdout)
	pick := func(folder string) string {
		ents, _ := os.ReadDir(filepath.Join(root, folder))
		var ids []string
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(n, ".") {
				ids = append(ids, n)
			}
		}
		if len(ids) == 0 {
			return ""
		}
		return ids[rand.IntN(len(ids))]
	}
	agents := []string{"toast", "nux"}
	for {
		a := agents[rand.IntN(2)]
		switch rand.IntN(8) {
		case 0, 1:
			to := a
			if rand.IntN(2) == 0 {
				to = "queue:work"
			}
			sent, err := s.Send(&maildir.Message{From: "mayor", To: to, Subject: "torture"})
			if err == nil {
				fmt.Fprintf(out, "S %s\n", sent[0].ID)
				out.Flush()
			}
		case 2:
			if id := pick("state/mail/" + a); id != "" {
				s.Archive(mbox(a), []string{id})
			}
		case 3:
			if id := pick("state/mail/" + a + "/archive"); id != "" {
				s.Restore(mbox(a), []string{id})
			}
		case 4:
			s.Claim(mbox("queue:work"), mbox(a))
		case 5:
			if id := pick("state/mail/" + a); id != "" {
				s.Release(mbox(a), id)
			}
		case 6:
			if id := pick("state/mail/" + a); id != "" {
				s.MarkRead(mbox(a), id)
			}
		case 7:
			if id := pick("state/mail/" + a); id != "" {
				s.MarkUnread(mbox(a), id)
			}
		}
	}
}

// fsck --repair in a loop beside writers of every kind, all of them killed
// with SIGKILL at random points, round after round, every other round's
// writers on the rename fallbacks (whose moves a kill can cut between link
// and unlink). After each round, and a last fsck --repair alone, every message
// a send acknowledged is in exactly one place: none lost, none doubled.
func TestFsckRepairBesideKilledWriters(t *testing.T) {
	ts := newStore(t)
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	acked := map[string]bool{}
	repairs := 0
	for round := range rounds {
		var (
			mu    sync.Mutex
			cmds  []*exec.Cmd
			wg    sync.WaitGroup
			lines = make(chan string, 1024)
		)
		start := func(env ...string) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), append([]string{"MAILDIR_TEST_CHILD=torture", "ROOT=" + ts.dir, "GORACE=atexit_sleep_ms=0"}, env...)...)
			cmd.Stderr = os.Stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			cmds = append(cmds, cmd)
			mu.Unlock()
			wg.Go(func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
			})
		}
		// A round's writers share one mode, as every process on one file
		// system does (the fallbacks are for a file system that refuses
		// renameat2's flags, and it refuses every process): a native
		// rename takes no folder lock, so beside a fallback rewrite in
		// progress it could move a name the rewrite then writes again.
		mode := "FALLBACK="
		if round%2 == 1 {
			mode = "FALLBACK=1"
		}
		start("ROLE=fsck", mode)
		start(mode)
		start(mode)
		start(mode)
		// Kill everyone once the writers have acknowledged a random number
		// of sends and fsck has run a random number of times: the kill
		// lands wherever each process happens to be.
		wantSends, wantRepairs := 20+rand.IntN(60), 1+rand.IntN(4)
		sends, fscks := 0, 0
		for sends < wantSends || fscks < wantRepairs {
			line := <-lines
			switch {
			case strings.HasPrefix(line, "S "):
				acked[line[2:]] = true
				sends++
			case line == "F":
				fscks++
			}
		}
		for _, c := range cmds {
			c.Process.Signal(syscall.SIGKILL)
		}
		// What was printed before the kill still counts.
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for line := range lines {
				if strings.HasPrefix(line, "S ") {
					acked[line[2:]] = true
				}
			}
		}()
		for _, c := range cmds {
			c.Wait()
		}
		wg.Wait()
		close(lines)
		<-drained
		repairs += fscks
		found, err := fsck.Check(context.Background(), ts.dir, fsck.Options{Repair: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			if f.Kind == fsck.Duplicate && !f.Repaired {
				t.Errorf("round %d: %v", round, f)
			}
		}
		where := placesIn(t, ts.dir)
		for id := range acked {
			if n := len(where[id]); n != 1 {
				t.Fatalf("round %d: acknowledged message %s is in %d places %v (fsck: %v)", round, id, n, where[id], found)
			}
		}
	}
	t.Logf("%d rounds, %d acknowledged sends, %d fsck --repair runs beside the writers", rounds, len(acked), repairs)
}

// placesIn maps every message id under the root's state/ to the folders
// that hold a file of that name.
func placesIn(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(filepath.Join(root, "state"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if id, ok := strings.CutSuffix(d.Name(), ".json"); ok && !d.IsDir() && !strings.HasPrefix(id, ".") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			out[id] = append(out[id], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
