package archive_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/maildir"
)

// readSyscalls returns the process's read(2)-family system call count
// (syscr in /proc/self/io). Listing a directory (getdents) does not count;
// reading a file does. ok is false where /proc/self/io does not exist.
func readSyscalls() (n int64, ok bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "syscr: "); found {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// fill writes n messages into agent's mailbox with names stamped age ago
// (or unstamped names when stamped is false).
func fill(tb testing.TB, dir, agent string, n int, age time.Duration, stamped bool) {
	tb.Helper()
	box := filepath.Join(dir, "state", "mail", agent)
	if err := os.MkdirAll(box, 0o700); err != nil {
		tb.Fatal(err)
	}
	content := []byte(`{"from":"x","subject":"s","timestamp":"` + now.Add(-age).Format(time.RFC3339) + `"}`)
	for i := range n {
		name := fmt.Sprintf("script-%06d.json", i)
		if stamped {
			name = maildir.NewID(now.Add(-age).Add(time.Duration(i)), "x") + ".json"
		}
		if err := os.WriteFile(filepath.Join(box, name), content, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

// A sweep with nothing to archive reads the directory and no file, when the
// names carry stamps. The control (unstamped names) shows the counter sees
// file reads.
func TestSweepOfStampedNamesOpensNoFiles(t *testing.T) {
	if _, ok := readSyscalls(); !ok {
		t.Skip("no /proc/self/io on this system to count reads")
	}
	const n = 2000
	count := func(stamped bool) int64 {
		f := newFixture(t)
		fill(t, f.dir, "a", n, time.Hour, stamped)
		runtime.GC()
		before, _ := readSyscalls()
		rep, err := f.sweeper().Sweep(context.Background())
		after, _ := readSyscalls()
		if err != nil || len(rep.Moved) != 0 {
			t.Fatalf("sweep moved %d, %v", len(rep.Moved), err)
		}
		return after - before
	}
	if reads := count(true); reads > 50 {
		t.Errorf("a sweep of %d young stamped messages made %d reads, want ~0", n, reads)
	}
	if reads := count(false); reads < n {
		t.Errorf("control: a sweep of %d unstamped messages made only %d reads; the counter is not counting", n, reads)
	}
}

// BenchmarkSweep100k moves 100,000 old messages into the archive; the floor
// is a bare rename loop doing the same (list, rename each, fsync both
// directories). Setup between iterations is not timed.
func BenchmarkSweep100k(b *testing.B) {
	const n = 100000
	run := func(b *testing.B, sweep func(f *fixture)) {
		f := newFixture(b)
		fill(b, f.dir, "a", n, 48*time.Hour, true)
		box := f.path("state/mail/a")
		arch := filepath.Join(box, "archive")
		for i := 0; i < b.N; i++ {
			if i > 0 { // put everything back, untimed
				b.StopTimer()
				ents, _ := os.ReadDir(arch)
				for _, e := range ents {
					os.Rename(filepath.Join(arch, e.Name()), filepath.Join(box, e.Name()))
				}
				b.StartTimer()
			}
			sweep(f)
		}
	}
	b.Run("mailfs", func(b *testing.B) {
		run(b, func(f *fixture) {
			rep, err := f.sweeper().Sweep(context.Background())
			if err != nil || len(rep.Moved) != n {
				b.Fatal(len(rep.Moved), err)
			}
		})
	})
	// The floor does what the sweep does: list the mailbox in directory
	// order (os.ReadDir would sort, and on ext4 renaming in name order
	// rather than hash order is several times slower), rename each file
	// from the mailbox's descriptor to the archive's, fsync both once.
	b.Run("floor", func(b *testing.B) {
		run(b, func(f *fixture) {
			box := f.path("state/mail/a")
			arch := filepath.Join(box, "archive")
			os.Mkdir(arch, 0o700)
			src, err := os.Open(box)
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			dst, err := os.Open(arch)
			if err != nil {
				b.Fatal(err)
			}
			defer dst.Close()
			ents, err := src.ReadDir(-1) // in directory order, as the sweep lists
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range ents {
				if e.Type().IsRegular() {
					if err := unix.Renameat(int(src.Fd()), e.Name(), int(dst.Fd()), e.Name()); err != nil {
						b.Fatal(err)
					}
				}
			}
			dst.Sync()
			src.Sync()
		})
	})
}

// BenchmarkSweepNothing100k sweeps 100,000 young messages: nothing moves,
// and the cost should be the directory listing, which is the floor.
// read-syscalls/op shows that no file is opened.
func BenchmarkSweepNothing100k(b *testing.B) {
	const n = 100000
	f := newFixture(b)
	fill(b, f.dir, "a", n, time.Hour, true)
	b.Run("mailfs", func(b *testing.B) {
		before, _ := readSyscalls()
		for b.Loop() {
			if rep, err := f.sweeper().Sweep(context.Background()); err != nil || len(rep.Moved) != 0 {
				b.Fatal(err)
			}
		}
		after, _ := readSyscalls()
		b.ReportMetric(float64(after-before)/float64(b.N), "read-syscalls/op")
	})
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadDir(f.path("state/mail/a")); err != nil {
				b.Fatal(err)
			}
		}
	})
}
