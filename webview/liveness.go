package webview

import (
	"os"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/live"
)

// A Liveness is what the town knows of an agent's session: whether one
// runs (a live deliverer serves it) and whether its runtime says it is
// busy or idle, and when the agent was last seen — its hooks' last run
// (a prompt, a tool call, a stop) or its deliverer's last look at the
// session, whichever is later.
type Liveness struct {
	State    string    // "busy", "idle", "running" (its runtime says neither), or "none"
	Runtime  string    // the running session's runtime
	LastSeen time.Time // zero: never seen
}

// liveness reads agent's liveness through the packages that keep it: the
// deliverers' records (live) and the hooks' state (hook).
func (s *Server) liveness(agent string) Liveness {
	l := Liveness{State: "none"}
	recs, _ := live.Records(s.Store, agent)
	rank := map[string]int{"none": 0, "running": 1, "idle": 2, "busy": 3}
	for _, r := range recs {
		if !r.Live() {
			continue
		}
		status := r.Session.Status
		if r.Session.Runtime == string(agentrt.Claude) { // its registry says it now; the record, every few seconds
			if st := live.ClaudeStatus(agentrt.ClaudeConfig(os.Getenv), r.Session.Process.PID); st != "" {
				status = st
			}
		}
		if status != "busy" && status != "idle" {
			status = "running"
		}
		if rank[status] > rank[l.State] {
			l.State, l.Runtime = status, r.Session.Runtime
		}
		if r.Updated.After(l.LastSeen) {
			l.LastSeen = r.Updated
		}
	}
	if seen, _, err := s.hooks.Seen(agent); err == nil && seen.After(l.LastSeen) {
		l.LastSeen = seen
	}
	return l
}
