package folderindex

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/mailfs/mailfs/internal/durable"
	"golang.org/x/sys/unix"
)

// ClockFile, in the index folder, records what the probe of the file
// system's clock found: the kernel release, the device, and "fine" or
// "coarse".
const ClockFile = "clock"

// A Clock says whether the file system holding the index folder — and so,
// when dev is the same device, the folders it indexes — gives a directory
// a later ctime at every change once its ctime has been read. Linux 6.13
// and later do so on ext4, xfs and btrfs ("multigrain" timestamps);
// before, and on other file systems, ctime moves in clock ticks, and two
// changes within one tick leave it the same. On a file system with a fine
// clock an unchanged stamp proves an unchanged folder the moment it is
// taken, with no racy window.
//
// It is measured, not assumed ([durable.Dir.ProbeClock] on the index
// folder), once per kernel release and device; the verdict is kept in
// ClockFile, and in the Clock for the life of the program. Anything
// uncertain means coarse. The zero Clock is ready to use.
type Clock struct {
	mu       sync.Mutex
	verdicts map[uint64]bool // device → verdict
}

// Fine reports whether device dev's file system has a fine clock; open
// opens the index folder as [Rules] Open does.
func (c *Clock) Fine(open func(create bool) (*durable.Dir, error), dev uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.verdicts[dev]; ok {
		return v
	}
	fine := probe(open, dev)
	if c.verdicts == nil {
		c.verdicts = map[uint64]bool{}
	}
	c.verdicts[dev] = fine
	return fine
}

func probe(open func(create bool) (*durable.Dir, error), dev uint64) bool {
	d, err := open(true)
	if err != nil || d == nil {
		return false
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil || st.Dev != dev {
		return false
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	release := string(bytes.TrimRight(u.Release[:], "\x00"))
	key := fmt.Sprintf("%s %x", release, dev)
	if data, err := d.Head(ClockFile, 512); err == nil {
		if k, verdict, ok := strings.Cut(strings.TrimSpace(string(data)), "\n"); ok && k == key {
			return verdict == "fine"
		}
	}
	fine := d.ProbeClock()
	verdict := "coarse"
	if fine {
		verdict = "fine"
	}
	_ = d.ReplaceEphemeral(ClockFile, []byte(key+"\n"+verdict+"\n"))
	return fine
}

// WitnessFile, in the index folder, records what the probe of the
// kernel's witness found (durable.Dir.ProbeWitness): the kernel, and how
// many signals a create raises in a watched folder, or "none".
const WitnessFile = "witness"

// witnessProbe is the kind of probe WitnessFile's count answers.
const witnessProbe = "mailfs-witness/1"

// A Witness knows how many signals a create raises in a watched folder on
// this kernel, what durable.Dir.CreateWitnessed must be told for a
// sender's note (see the adds log). It is measured, not assumed, once per
// kernel (its release and build): the answer is kept in WitnessFile, and
// in the Witness for the life of the program. Anything uncertain means 0:
// no witness, and no notes. The zero Witness is ready to use.
type Witness struct {
	once  sync.Once
	count int
}

// Count returns the count; open opens the index folder as [Rules] Open
// does.
func (w *Witness) Count(open func(create bool) (*durable.Dir, error)) int {
	w.once.Do(func() { w.count = probeWitness(open) })
	return w.count
}

func probeWitness(open func(create bool) (*durable.Dir, error)) int {
	d, err := open(true)
	if err != nil || d == nil {
		return 0
	}
	defer d.Close()
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return 0
	}
	// The count is the kernel's answer to durable's probe: both are in the
	// key (witnessProbe names the probe's kind of create and what it
	// watches; a change to either changes it).
	key := witnessProbe + " " + string(bytes.TrimRight(u.Release[:], "\x00")) + " " + string(bytes.TrimRight(u.Version[:], "\x00"))
	if data, err := d.Head(WitnessFile, 1024); err == nil {
		if k, v, ok := strings.Cut(strings.TrimSpace(string(data)), "\n"); ok && k == key {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 || n > 64 {
				return 0
			}
			return n
		}
	}
	n, err := d.ProbeWitness()
	verdict := strconv.Itoa(n)
	if err != nil || n <= 0 {
		n, verdict = 0, "none"
	}
	_ = d.ReplaceEphemeral(WitnessFile, []byte(key+"\n"+verdict+"\n"))
	return n
}
