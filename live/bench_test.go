package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkRealClaudeDoorbell measures, against a running Claude Code
// session in a long tool call, the time from a send returning to the
// session queuing the doorbell (its debug log's "Routed user message to
// queue"), and, as the floor, the same for a bare push straight into the
// session's socket: what a program that knew of the mail the instant it
// landed would pay. It reports p50 and p99 of each.
func BenchmarkRealClaudeDoorbell(b *testing.B) {
	tw := newTown(b, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Default permissions (not bypassed): Claude Code then takes a push
	// from any local process, so the floor's bare push is delivered too.
	_, done := tw.start(ctx, "--allowedTools", "Bash")
	defer func() { os.WriteFile(tw.release, nil, 0o644); <-done }()
	rec := tw.deliverer()
	until(b, "the long tool call", 60*time.Second, func() bool { return len(tw.model.Requests()) >= 1 })
	log := filepath.Join(tw.home, "debug.log")
	routed := func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "Routed user message to queue")
	}
	waitRouted := func(n int) {
		for routed() <= n {
			time.Sleep(time.Millisecond)
		}
	}
	sock := rec.Session.Where
	b.Run("mailfs", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			n := routed()
			start := time.Now()
			if _, err := tw.store.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "urgent", Body: "b", Priority: maildir.Urgent}); err != nil {
				b.Fatal(err)
			}
			waitRouted(n)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("floor", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			n := routed()
			start := time.Now()
			c, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			c.Write([]byte(`{"type":"user","message":{"role":"user","content":"floor"}}` + "\n"))
			c.(*net.UnixConn).CloseWrite()
			c.Close()
			waitRouted(n)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) { reportAs(b, "", lat) }

// reportAs reports p50 and p99 of lat, named with prefix.
func reportAs(b *testing.B, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	if prefix != "" {
		prefix += "-"
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, prefix+"p99-ms")
}

// BenchmarkRealClaudeDelivered measures, against a real interactive Claude
// Code session, the time from a send beginning to the doorbell written into
// the session (the record's rung time), to its taking it in (submitted:
// the prompt hook, the transcript's queue), and to its delivery (the
// model's answer in the transcript, as the deliverer read it); "receipt"
// is when the deliverer's record first said delivered, as a sender
// waiting would learn it (polled every 20 ms). "idle": the doorbell wakes the session into a new turn. "busy": the
// session runs one 200 ms tool call after another, and Claude Code takes
// the doorbell in at the next call's end. Each iteration waits, untimed,
// for the deliverer's spacing after the last doorbell: the latency is that
// of urgent mail after a quiet spell. Run with -benchtime 10x (ten
// doorbells a minute at most).
func BenchmarkRealClaudeDelivered(b *testing.B) {
	for _, mode := range []string{"idle", "busy"} {
		b.Run(mode, func(b *testing.B) {
			tw := newTown(b, "")
			_, tmux := tw.interactive()
			if mode == "busy" {
				tmux("send-keys", "-l", "START-BUSY-LOOP")
				tmux("send-keys", "Enter")
				until(b, "the session to be busy", 60*time.Second, func() bool {
					r := tw.record()
					return r != nil && r.Session.Status == "busy"
				})
				defer os.WriteFile(tw.release, nil, 0o644)
			}
			var written, submitted, confirmed, seen []time.Duration
			for b.Loop() {
				if r := tw.record(); r != nil && !r.LastRing.IsZero() {
					time.Sleep(time.Until(r.LastRing.Add(live.DefaultSpacing + 100*time.Millisecond)))
				}
				if mode == "idle" {
					until(b, "the session to be idle", 60*time.Second, func() bool { r := tw.record(); return r != nil && r.Session.Status == "idle" })
				}
				start := time.Now()
				m := tw.send("MERGE_FAILED", maildir.Urgent)
				var r *live.Record
				until(b, "the doorbell to be confirmed", 60*time.Second, func() bool {
					r = tw.record()
					return r != nil && !r.Confirmed[m.ID].IsZero()
				})
				seen = append(seen, time.Since(start))
				if tw.reachedModel(0, m.ID) == 0 {
					b.Fatalf("%s is delivered, yet no request to the model carried it", m.ID)
				}
				written = append(written, r.Rung[m.ID].Sub(start))
				if at := r.Submitted[m.ID]; !at.IsZero() {
					submitted = append(submitted, at.Sub(start))
				}
				confirmed = append(confirmed, r.Confirmed[m.ID].Sub(start))
			}
			reportAs(b, "written", written)
			if len(submitted) > 0 {
				reportAs(b, "submitted", submitted)
			}
			reportAs(b, "delivered", confirmed)
			reportAs(b, "receipt", seen)
		})
	}
}

// BenchmarkIdleDeliverers measures what deliverers cost while nothing
// lands: n "mailfs live claude" processes (n agents of one stand-in
// session, which registers as Claude Code does) left idle for 10 s; it
// reports each one's CPU time per minute and resident memory, for 1 and
// for 50 at once.
func BenchmarkIdleDeliverers(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("reads /proc: Linux only")
	}
	bin, err := buildOnce()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 50} {
		b.Run(fmt.Sprintf("deliverers=%d", n), func(b *testing.B) {
			for b.Loop() {
				cpu, rss := idleDeliverers(b, bin, n, 10*time.Second)
				b.ReportMetric(cpu, "cpu-ms/min-each")
				b.ReportMetric(rss, "rss-MB-each")
			}
		})
	}
}

// idleDeliverers runs n idle deliverers for d and returns the mean CPU
// milliseconds per minute and resident megabytes of one.
func idleDeliverers(b *testing.B, bin string, n int, d time.Duration) (cpuPerMin, rssMB float64) {
	base := b.TempDir()
	config, root := filepath.Join(base, "claude"), filepath.Join(base, ".chipset")
	if _, err := maildir.Open(root); err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(base, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	self := live.Self()
	reg, _ := json.Marshal(map[string]any{"pid": self.PID, "procStart": self.Start, "sessionId": "bench", "peerProtocol": 1, "messagingSocketPath": sock, "status": "idle"})
	os.MkdirAll(filepath.Join(config, "sessions"), 0o700)
	os.WriteFile(filepath.Join(config, "sessions", strconv.Itoa(self.PID)+".json"), reg, 0o600)
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	for i := range n {
		c := exec.Command(bin, "live", "claude", fmt.Sprintf("agent%d", i))
		c.Env = append(os.Environ(), "MAILFS_ROOT="+root, "CLAUDE_CONFIG_DIR="+config, "CLAUDE_CODE_MESSAGING_SOCKET="+sock, "MAILFS_LIVE=on")
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	s, _ := maildir.Open(root)
	until(b, "every deliverer to start", 60*time.Second, func() bool {
		for i := range n {
			if recs, _ := live.Records(s, fmt.Sprintf("agent%d", i)); len(recs) == 0 {
				return false
			}
		}
		return true
	})
	ticks := func() (t float64) {
		for _, c := range cmds {
			t += procCPU(c.Process.Pid)
		}
		return t
	}
	// A record is written before the deliverer's watcher and first checks
	// are set up: let the start settle (one check period), so that what
	// is measured is the idle loop, not the end of 50 starts.
	time.Sleep(live.WatchedCheck)
	before := ticks()
	time.Sleep(d)
	spent := (ticks() - before) / 1e6 // ms
	for _, c := range cmds {
		rssMB += procRSS(c.Process.Pid)
	}
	return spent / float64(n) / d.Minutes(), rssMB / float64(n)
}

// procCPU is the CPU time pid's threads have used, in nanoseconds, from
// the scheduler's own count (se.sum_exec_runtime in /proc/PID/task/*/sched,
// in milliseconds to the nanosecond): /proc/PID/stat's clock ticks are
// 10 ms, more than an idle deliverer uses in a window, so 50 of them
// summed from ticks moved by a factor of five between runs.
func procCPU(pid int) (ns float64) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/sched", pid))
	for _, task := range tasks {
		data, _ := os.ReadFile(task)
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "se.sum_exec_runtime"); ok {
				ms, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(rest), ":")), 64)
				ns += ms * 1e6
			}
		}
	}
	return ns
}

// procRSS is the resident memory of pid, in megabytes.
func procRSS(pid int) float64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkRealQwenDelivered measures, against a real interactive Qwen
// Code session woken from idle, the time from a send beginning to the
// doorbell written (the record's rung time) and to its delivery (the
// model's answer in Qwen Code's chat record, as the deliverer read it).
// Run with -benchtime 5x.
func BenchmarkRealQwenDelivered(b *testing.B) {
	tw := newQwenTown(b)
	tw.deliverer()
	var written, delivered []time.Duration
	for b.Loop() {
		if r := tw.record(); r != nil && !r.LastRing.IsZero() {
			time.Sleep(time.Until(r.LastRing.Add(live.DefaultSpacing + 100*time.Millisecond)))
		}
		// The turn before is over: every doorbell so far is answered.
		until(b, "the session to be idle", 90*time.Second, func() bool {
			r := tw.record()
			return r != nil && len(r.Bells) == 0
		})
		start := time.Now()
		m := tw.send("MERGE_FAILED", maildir.Urgent)
		var r *live.Record
		until(b, "the doorbell to be delivered", 90*time.Second, func() bool {
			r = tw.record()
			return r != nil && !r.Confirmed[m.ID].IsZero()
		})
		written = append(written, r.Rung[m.ID].Sub(start))
		delivered = append(delivered, r.Confirmed[m.ID].Sub(start))
	}
	reportAs(b, "written", written)
	reportAs(b, "delivered", delivered)
}

// BenchmarkRealPiDelivered measures, against a real interactive pi
// session, the time from a send beginning to the doorbell written (the
// record's rung time) and to its delivery (the model's answer in pi's
// session file). "idle": the doorbell wakes the
// session into a new turn. "busy": the session runs one 200 ms tool call
// after another, and pi takes the doorbell in (steered) after the running
// call. Each iteration waits, untimed, for the deliverer's spacing after
// the last doorbell. "delivered" is the time pi's session file gives the
// model's answer; "receipt" is when the deliverer's record first said
// delivered, as a sender waiting would learn it (polled every 20 ms).
// Run with -benchtime 10x.
func BenchmarkRealPiDelivered(b *testing.B) {
	for _, mode := range []string{"idle", "busy"} {
		b.Run(mode, func(b *testing.B) {
			var release string
			ps := startPi(b, func(r stubmodel.Request) stubmodel.Reply {
				if _, err := os.Stat(release); strings.Contains(r.Raw, "START-BUSY-LOOP") && err != nil {
					return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "sleep 0.2"}}
				}
				return stubmodel.Reply{Text: "done"}
			}, nil)
			release = ps.release
			ps.deliverer()
			if mode == "busy" {
				ps.type_("START-BUSY-LOOP")
				until(b, "the session to be busy", 60*time.Second, func() bool {
					r := liveRecord(ps.store, "pi")
					return r != nil && r.Session.Status == "busy"
				})
				defer os.WriteFile(ps.release, nil, 0o644)
			}
			var written, delivered, seen []time.Duration
			for b.Loop() {
				if r := liveRecord(ps.store, "pi"); r != nil && !r.LastRing.IsZero() {
					time.Sleep(time.Until(r.LastRing.Add(live.DefaultSpacing + 100*time.Millisecond)))
				}
				if mode == "idle" {
					ps.idle()
				}
				start := time.Now()
				m := sendToast(b, ps.store, "MERGE_FAILED", maildir.Urgent)
				var r *live.Record
				until(b, "the doorbell to be delivered", 60*time.Second, func() bool {
					r = liveRecord(ps.store, "pi")
					return r != nil && !r.Confirmed[m.ID].IsZero()
				})
				seen = append(seen, time.Since(start))
				if !slices.ContainsFunc(ps.model.Requests(), func(q stubmodel.Request) bool { return strings.Contains(q.Raw, m.ID) }) {
					b.Fatalf("%s is delivered, yet no request to the model carried it", m.ID)
				}
				if mode == "busy" && r.Session.Status != "busy" {
					b.Fatalf("the busy loop ended before the doorbell was delivered")
				}
				written = append(written, r.Rung[m.ID].Sub(start))
				delivered = append(delivered, r.Confirmed[m.ID].Sub(start))
			}
			reportAs(b, "written", written)
			reportAs(b, "delivered", delivered)
			reportAs(b, "receipt", seen)
		})
	}
}
