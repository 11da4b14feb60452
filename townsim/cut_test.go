package townsim

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Power cuts. A host loses power while one of its commands is at an
// fsync boundary: strace kills the command as it enters its Nth fsync
// (-e inject=fsync:signal=KILL:when=N), so what that fsync would have
// made durable is not; the cut then drops what a file system may drop of
// it (the names that command changed in the folder it was syncing, since
// that folder's last fsync, are put back as they were: each unsynced
// change of a folder may or may not survive a cut, and this takes the
// losing outcome), and every other command running on the host dies with
// it. The agents retry as after any kill. Writes the command made durable
// before the cut stay: the oracle checks that nothing acknowledged is lost.
//
// What it does not model: a cut that loses other processes' unsynced
// changes (they die, their changes stay), the contents of files written
// but not synced (only the dot-temps, which nothing reads), and git's own
// files (git does not fsync by default; a host's .git after a real cut may
// need repair).

// A cutter arms a power cut on a host: the next agent command there runs
// under strace and is killed at an fsync.
type cutter struct {
	mu     sync.Mutex
	strace string        // "" when strace is not installed: no cuts
	armed  map[*host]int // host -> which fsync (1-based) the cut comes at
	cuts   int           // cuts made
	undone int           // folder changes the cuts dropped
	missed int           // armed commands that made fewer fsyncs (the next command is caught instead)
	over   bool          // no more cuts
}

// arm makes the next agent command on h the one the power cut catches,
// at its nth fsync.
func (c *cutter) arm(h *host, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.strace != "" && !c.over {
		c.armed[h] = n
	}
}

// take disarms h and returns the fsync its cut comes at (0: none armed).
func (c *cutter) take(h *host) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.armed[h]
	delete(c.armed, h)
	return n
}

// powerCuts cuts the power of a host now and then while the mayor posts:
// about every 8 s, alternately alpha and beta, at the 1st to 4th fsync of
// the command caught.
func (tw *town) powerCuts(post context.Context) {
	if tw.cut.strace == "" {
		return
	}
	a := tw.agent("power", tw.alpha)
	defer func() {
		tw.cut.mu.Lock()
		clear(tw.cut.armed)
		tw.cut.over = true
		tw.cut.mu.Unlock()
	}()
	for i := 0; post.Err() == nil; i++ {
		a.pause(post, 8*time.Second)
		tw.cut.arm([]*host{tw.alpha, tw.beta}[i%2], 1+a.rng.IntN(4))
	}
}

// straced wraps a command of host h in strace, killing it at its nth
// fsync and logging its fsyncs and its changes of names to log.
func (tw *town) straced(h *host, n int, log string, args []string) *exec.Cmd {
	argv := []string{"-f", "-y", "-qq", "-o", log,
		"-e", "trace=fsync,fdatasync,renameat2,renameat,rename,linkat,link,unlinkat,unlink",
		"-e", fmt.Sprintf("inject=fsync:signal=KILL:when=%d", n)}
	if h.wrap != "" {
		argv = append(argv, h.wrap)
	}
	argv = append(argv, tw.bin)
	return exec.Command(tw.cut.strace, append(argv, args...)...)
}

// afterCut finishes a cut whose command strace killed (its log at log):
// drops the unsynced changes of the folder it was syncing, then takes the
// rest of the host down. It reports whether the command was cut.
func (tw *town) afterCut(h *host, n int, log string, args []string) bool {
	defer os.Remove(log)
	ops, dir, cut := readCutLog(log)
	if !cut {
		tw.cut.mu.Lock()
		tw.cut.missed++
		tw.cut.mu.Unlock()
		tw.cut.arm(h, n)
		return false
	}
	died := tw.crash(h) // the power goes for every command at once
	tw.led.fault("power cut", time.Now(), time.Now(), h.name)
	undone := undoUnsynced(ops, dir)
	tw.cut.mu.Lock()
	tw.cut.cuts++
	tw.cut.undone += undone
	tw.cut.mu.Unlock()
	tw.led.add(entry{host: h.name, agent: "power", op: "power-cut",
		note: fmt.Sprintf("mailfs %s cut at an fsync of %s; %d unsynced change(s) of it dropped; %d other commands died", strings.Join(args, " "), dir, undone, died)})
	return true
}

// A nameOp is one change of names a command made, as strace logged it.
type nameOp struct {
	call             string // renameat2, linkat, unlinkat, ...
	fromDir, from    string
	toDir, to, flags string
}

var (
	straceLine = regexp.MustCompile(`^\d+ (\w+)\((.*)\) += (-?\d+|\?)`)
	fdPath     = regexp.MustCompile(`^-?\d+<([^>]*)>$`)
	resumed    = regexp.MustCompile(`^\d+ (\w+)\((.*) <unfinished \.\.\.>$`)
)

// readCutLog reads the strace log of a cut command: its successful
// changes of names, in order, and the folder whose fsync it was killed
// in (cut is false if it was not killed in an fsync of a folder, or not
// killed at all).
func readCutLog(log string) (ops []nameOp, dir string, cut bool) {
	f, err := os.Open(log)
	if err != nil {
		return nil, "", false
	}
	defer f.Close()
	var last string // the argument of the fsync entered last, unfinished
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := resumed.FindStringSubmatch(line); m != nil && (m[1] == "fsync" || m[1] == "fdatasync") {
			last = m[2]
			continue
		}
		m := straceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if (m[1] == "fsync" || m[1] == "fdatasync") && m[3] == "?" {
			last = m[2]
			continue
		}
		if m[3] != "0" {
			continue
		}
		if m[1] == "fsync" || m[1] == "fdatasync" {
			if fm := fdPath.FindStringSubmatch(strings.TrimSpace(m[2])); fm != nil {
				if st, err := os.Stat(fm[1]); err == nil && st.IsDir() {
					ops = append(ops, nameOp{call: "fsync", toDir: fm[1]})
				}
			}
			continue
		}
		a := splitArgs(m[2])
		p := func(i int) string {
			if i < len(a) {
				if fm := fdPath.FindStringSubmatch(a[i]); fm != nil {
					return fm[1]
				}
			}
			return ""
		}
		s := func(i int) string {
			if i < len(a) {
				return strings.Trim(a[i], `"`)
			}
			return ""
		}
		switch m[1] {
		case "renameat2", "renameat":
			flags := ""
			if m[1] == "renameat2" {
				flags = s(4)
			}
			ops = append(ops, nameOp{call: "rename", fromDir: p(0), from: s(1), toDir: p(2), to: s(3), flags: flags})
		case "linkat":
			ops = append(ops, nameOp{call: "link", fromDir: p(0), from: s(1), toDir: p(2), to: s(3)})
		case "unlinkat":
			if !strings.Contains(s(2), "AT_REMOVEDIR") {
				ops = append(ops, nameOp{call: "unlink", toDir: p(0), to: s(1)})
			}
		}
	}
	if fm := fdPath.FindStringSubmatch(strings.TrimSpace(last)); fm != nil {
		if st, err := os.Stat(fm[1]); err == nil && st.IsDir() {
			return ops, fm[1], true
		}
		return ops, filepath.Dir(fm[1]), true // a file's fsync: its folder's names are as durable as they were
	}
	return ops, "", false
}

// splitArgs splits strace's argument list at the commas between
// arguments (none of the town's names hold a comma or a quote).
func splitArgs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ", ") {
		out = append(out, strings.TrimSpace(a))
	}
	return out
}

// undoUnsynced puts the names that ops changed in folder dir since the
// command last fsynced it (durable fsyncs a folder after each change, so
// that is the last change, or the few steps of one fallback move) back as
// they were before, and returns how many changes it undid. It works on a
// model of the names (path -> the file, by inode), taking the changes back
// newest first, then makes the tree say what the model says. Where a name
// a change replaced cannot be known (a plain rename over it, with no other
// name of the old file), nothing is undone: keeping every change is an
// outcome a cut may also have.
func undoUnsynced(ops []nameOp, dir string) int {
	var last []nameOp // newest first
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		if o.toDir != dir {
			continue
		}
		if o.call == "fsync" {
			break
		}
		last = append(last, o)
	}
	if len(last) == 0 {
		return 0
	}
	const unknown = ^uint64(0)
	model := map[string]uint64{}  // path -> inode; 0: no such name
	holder := map[uint64]string{} // inode -> a path that holds it now
	look := func(p string) uint64 {
		if ino, ok := model[p]; ok {
			return ino
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			model[p] = 0
			return 0
		}
		model[p] = st.Ino
		holder[st.Ino] = p
		return st.Ino
	}
	before := map[string]uint64{} // the touched names as they are now
	for _, o := range last {
		for _, p := range []string{filepath.Join(o.toDir, o.to), filepath.Join(o.fromDir, o.from)} {
			if p != "." && filepath.IsAbs(p) {
				before[p] = look(p)
			}
		}
	}
	for _, o := range last { // newest first: each taken back
		to, from := filepath.Join(o.toDir, o.to), filepath.Join(o.fromDir, o.from)
		switch {
		case o.call == "rename" && strings.Contains(o.flags, "RENAME_EXCHANGE"):
			model[to], model[from] = model[from], model[to]
		case o.call == "rename":
			model[from] = model[to]
			model[to] = 0
			if !strings.Contains(o.flags, "RENAME_NOREPLACE") {
				model[to] = unknown // what it replaced, if anything
			}
		case o.call == "link":
			if model[from] == unknown {
				model[from] = model[to]
			}
			model[to] = 0
		case o.call == "unlink":
			model[to] = unknown // its file, known if an older change names it
		}
	}
	for _, ino := range model {
		if ino == unknown {
			return 0
		}
	}
	// Make it so: each name that holds another file gets it through a
	// restore name first, then the names the model drops go, then the
	// restore names take their places.
	var moves [][2]string
	for p, ino := range model {
		if ino == before[p] {
			continue
		}
		if ino != 0 {
			h, ok := holder[ino]
			if !ok {
				return 0
			}
			tmp := filepath.Join(filepath.Dir(p), fmt.Sprintf(".mailfs-cut-%d", len(moves)))
			if os.Link(h, tmp) != nil {
				return 0
			}
			moves = append(moves, [2]string{tmp, p})
		}
	}
	for p, ino := range model {
		if ino != before[p] && before[p] != 0 {
			os.Remove(p)
		}
	}
	for _, m := range moves {
		os.Rename(m[0], m[1])
	}
	return len(last)
}
