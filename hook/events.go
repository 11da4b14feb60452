package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// An Event is an agent runtime's hook event, named for what happens.
type Event string

// The events mailfs answers (SPEC §7).
const (
	SessionStart Event = "session-start" // a session begins or resumes: handoff notes and unread mail
	PromptSubmit Event = "prompt-submit" // a person submitted a prompt: the full reminder
	PostTool     Event = "post-tool"     // a tool call finished: only urgent news, rate-limited
	Stop         Event = "stop"          // the agent would stop: hold it while urgent or high mail waits
)

// Events lists the events, in the order of a session.
var Events = []Event{SessionStart, PromptSubmit, PostTool, Stop}

// Limit is the most bytes a hook prints for rt by default, counted as the
// runtime receives them (after JSON encoding). Claude Code shows the model
// at most 10,000 characters of a hook's added context (past that, a
// preview of about 2 KB); Codex and Gemini CLI document no cap, and get the
// same bound, so an agent's context is never flooded whatever waits.
func Limit(rt agentrt.Runtime) int { return 9000 }

// Input is what a runtime sends a hook on stdin; every runtime's fields
// that mailfs reads. Unknown fields are ignored.
type Input struct {
	SessionID      string `json:"session_id"`
	HookEventName  string `json:"hook_event_name"`
	StopHookActive bool   `json:"stop_hook_active"` // Claude Code, Codex: this stop follows a stop hook's block
	Source         string `json:"source"`           // SessionStart: startup, resume, clear, compact
	Prompt         string `json:"prompt"`           // PromptSubmit: the prompt, which may be a doorbell
	TranscriptPath string `json:"transcript_path"`  // Claude Code, Qwen Code: the session's transcript
}

// DoorbellMark is how a live doorbell for agent begins (see package
// live): a prompt that holds it is a doorbell the deliverer rang.
func DoorbellMark(agent string) string { return "mailfs doorbell for " + agent + ": " }

// RingMark is how a doorbell names its ring: a nonce, fresh for each ring,
// that lets the session's hooks and records say what became of which
// doorbell (see Handler.Doorbells and package live).
func RingMark(nonce string) string { return "(ring " + nonce + ")" }

// ringNonce finds the RingMarks in a prompt.
var ringNonce = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(ring ([0-9a-f]{16})\)`) })

// RingNonces returns the nonces of the doorbells for agent that text
// carries, each once: none unless text holds agent's DoorbellMark.
func RingNonces(agent, text string) []string {
	if !strings.Contains(text, DoorbellMark(agent)) {
		return nil
	}
	return RingMarks(text)
}

// RingMarks returns the nonces of every RingMark in text, each once,
// whoever's doorbell it ends.
func RingMarks(text string) []string {
	var out []string
	for _, m := range ringNonce().FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// Defaults of a Handler's zero fields.
const (
	DefaultPostToolEvery = 2 * time.Minute
	DefaultMaxStopBlocks = 3
)

// maxHandoffs and maxHandoffBody bound what a session start shows of
// handoff notes: the newest few, each cut with the command that shows it.
const (
	maxHandoffs    = 3
	maxHandoffBody = 2000
)

// A Handler answers hook events for agents. Set Collector's fields; the
// rest have defaults.
type Handler struct {
	Collector

	// PostToolEvery is the least time between two post-tool checks of one
	// agent; a call sooner says nothing and reads nothing.
	PostToolEvery time.Duration
	// MaxStopBlocks bounds how many stops in a row one agent's stop hook
	// blocks, whatever waits: it can never loop.
	MaxStopBlocks int
	// MaxBytes bounds what a hook prints, in bytes as the runtime receives
	// them; 0 means Limit(runtime).
	MaxBytes int
	// StateDir is the folder for the agents' hook state; "" means
	// StateDirFor(the store's root, os.Getenv).
	StateDir string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Doorbells, if set, is told the nonces of the doorbells a prompt
	// carries (see RingNonces): the evidence, from inside the session,
	// that the runtime took them in as input, by which live delivery
	// says "submitted" — not "delivered": the model may never be called.
	// The programs that answer hooks set it to [Confirm], which records it.
	Doorbells func(agent string, nonces []string) error

	dirOnce sync.Once // stateDir, worked out once
	dir     string
	dirErr  error
}

// An Answer is what a hook prints: Output on stdout (may be empty) and
// Errs for stderr. The exit status is always 0.
type Answer struct {
	Output []byte
	Errs   []error
}

// Handle answers event ev of runtime rt for agent, given the runtime's
// input. Problems are in the answer's Errs; the answer never asks the
// runtime to fail.
//
// One message is shown once per turn: a turn starts at a session start or
// a prompt (the first prompt after a session start continues its turn),
// and within it the post-tool and stop hooks say nothing of mail the agent
// was already shown.
func (h *Handler) Handle(ctx context.Context, rt agentrt.Runtime, ev Event, agent string, in Input) Answer {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return Answer{Errs: []error{err}}
	}
	if !slices.Contains(Events, ev) {
		return Answer{Errs: []error{fmt.Errorf("hook: unknown event %q (want %s)", ev, eventNames())}}
	}
	if !slices.Contains(agentrt.HookFormats(), rt) {
		return Answer{Errs: []error{fmt.Errorf("hook: unknown runtime %q", rt)}}
	}
	if rt == agentrt.Copilot && ev != Stop {
		// Nothing is read, claimed or recorded as shown: the runtime would
		// show the model none of it.
		return Answer{Errs: []error{fmt.Errorf("hook: Copilot CLI shows the model nothing a %s hook prints; mailfs answers only its agentStop (mailfs setup copilot installs that one)", ev)}}
	}
	var a Answer
	if n := RingNonces(agent, in.Prompt); ev == PromptSubmit && len(n) > 0 && h.Doorbells != nil {
		a.Errs = append(a.Errs, h.Doorbells(agent, n))
	}
	switch ev {
	case PromptSubmit:
		d := h.deliver(rt, ev, agent, in, h.Collect(ctx, agent), "")
		a.Output, a.Errs = d.Output, append(a.Errs, d.Errs...)
	case SessionStart:
		var errs []error
		notes := h.handoffs(agent, &errs)
		d := h.deliver(rt, ev, agent, in, h.Collect(ctx, agent), notes)
		a.Output, a.Errs = d.Output, append(append(a.Errs, errs...), d.Errs...)
	case PostTool:
		a = h.postTool(ctx, rt, agent)
	case Stop:
		a = h.stop(rt, agent, in)
	}
	a.Errs = slices.DeleteFunc(a.Errs, func(err error) bool { return err == nil })
	// Once each: the mail, the nudges and the state often fail alike.
	var once []error
	for _, err := range a.Errs {
		if !slices.ContainsFunc(once, func(e error) bool { return e.Error() == err.Error() }) {
			once = append(once, err)
		}
	}
	a.Errs = once
	return a
}

// newTurn starts the count of stops blocked in a row again at a session
// start, and at a prompt, unless the prompt comes straight after a
// blocking stop: that is the runtime going on because of the block (Gemini
// CLI turns a denied AfterAgent into a new turn), still the same row. An
// allowed stop ends a row too (see stop). So the bound holds within one
// turn of work, and a new session or a person's next prompt is held again
// when new urgent mail waits.
//
// It changes st and reports whether it did; deliver decides it in the same
// update as what it shows (one read of the state a prompt, not two).
func newTurn(st *state, ev Event) bool {
	if ev != SessionStart && ev != PromptSubmit || st.StopBlocks == 0 || ev == PromptSubmit && st.LastEvent == Stop {
		return false
	}
	st.StopBlocks = 0
	return true
}

// seenEvery is how fresh the record of a hook's last call is kept: a call
// within this time of the recorded one, for the same event, that has
// nothing else to record writes nothing.
const seenEvery = 30 * time.Second

// Seen reports when agent's hooks last ran (to within 30 seconds), and for
// which event: what "mailfs doctor" shows. A zero time means never.
func (h *Handler) Seen(agent string) (time.Time, Event, error) {
	st, err := h.peek(agent)
	return st.LastSeen, st.LastEvent, err
}

// UsedMCP records that agent called an MCP tool (at most once a minute is
// written), for "mailfs doctor".
func (h *Handler) UsedMCP(agent, tool string) error {
	now := h.now()
	return h.update(agent, func(st *state) bool {
		if st.LastMCPTool == tool && !st.LastMCP.After(now) && now.Sub(st.LastMCP) < time.Minute {
			return false
		}
		st.LastMCP, st.LastMCPTool = now, tool
		return true
	})
}

// MCPSeen reports when agent last called an MCP tool, and which.
func (h *Handler) MCPSeen(agent string) (time.Time, string, error) {
	st, err := h.peek(agent)
	return st.LastMCP, st.LastMCPTool, err
}

func eventNames() string {
	names := make([]string, len(Events))
	for i, e := range Events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// deliver shows the agent a collected reminder, after prefix (handoff
// notes), as added context for rt: without the mail it was shown earlier in
// this turn, within the byte bound, recording what it showed. Then it
// commits the reminder's nudges.
func (h *Handler) deliver(rt agentrt.Runtime, ev Event, agent string, in Input, res *Result, prefix string) Answer {
	a := Answer{Errs: res.Errs}
	if res.Reminder == nil {
		if err := h.update(agent, func(st *state) bool { return newTurn(st, ev) }); err != nil {
			a.Errs = append(a.Errs, err)
		}
		return a
	}
	decided := false
	err := h.update(agent, func(st *state) bool {
		decided = true
		turned := newTurn(st, ev)
		was := *st
		was.TurnShown = slices.Clone(st.TurnShown)
		was.Reminded = slices.Clone(st.Reminded)
		// A doorbell that became the prompt already lists its mail, and
		// the deliverer that rang it names the rest in doorbells of its
		// own: the hook lists no mail beside it. A busy session joins
		// queued doorbells into one request, each with its hook's note;
		// a note listing mail a later doorbell names would name it twice
		// in one request.
		bell := ev == PromptSubmit && strings.Contains(in.Prompt, DoorbellMark(agent))
		if res.Reminder.Partial == "" && len(res.Errs) == 0 {
			// The whole of the unread mail is at hand: what is no longer
			// unread need not be remembered as shown.
			unread := map[string]bool{}
			for _, m := range res.Reminder.Mail {
				unread[m.ID] = true
			}
			st.forgetRead(unread)
		}
		if bell {
			for _, m := range res.Reminder.Mail {
				if strings.Contains(in.Prompt, m.ID) {
					st.shown(m.ID)
					st.reminded(m.ID)
				}
			}
		}
		if ev == SessionStart {
			// A new context, or one resumed, cleared or compacted: it may
			// hold none of what was named before, so all is named again.
			st.Reminded = nil
		}
		newTurn := !bell && (ev == SessionStart || ev == PromptSubmit && st.LastEvent != SessionStart)
		if bell {
			res.Reminder.Mail = nil
		}
		if !newTurn {
			res.Reminder.Mail = slices.DeleteFunc(res.Reminder.Mail, func(m *maildir.Message) bool {
				return slices.Contains(st.TurnShown, m.ID)
			})
		}
		if ev == PromptSubmit && !bell {
			// Mail named earlier in the session is counted, not listed again.
			res.Reminder.Earlier = map[string]bool{}
			for _, id := range st.Reminded {
				res.Reminder.Earlier[id] = true
			}
		}
		a.Output = h.fit(rt, ev, res, prefix, &a.Errs)
		shown := res.Reminder.Listed()
		if newTurn {
			st.TurnShown = nil
		}
		st.shown(shown...)
		for _, m := range res.Reminder.Mail {
			if res.Reminder.Earlier[m.ID] {
				// Counted in this turn, with its instruction: the post-tool
				// and stop hooks do not list it again.
				st.shown(m.ID)
			}
		}
		st.reminded(res.Reminder.Named()...)
		// The record of the call is kept fresh to within seenEvery: a
		// prompt hook with nothing new to record writes nothing.
		now := h.now()
		if !turned && slices.Equal(st.TurnShown, was.TurnShown) && slices.Equal(st.Reminded, was.Reminded) && st.LastEvent == ev && !st.LastSeen.After(now) && now.Sub(st.LastSeen) < seenEvery {
			return false
		}
		st.LastSeen, st.LastEvent = now, ev
		return true
	})
	if err != nil {
		a.Errs = append(a.Errs, err)
		if !decided {
			if ev == PostTool {
				// Without a record, a post-tool hook would speak at every
				// tool call: it says nothing, and its nudges go back.
				if res.batch != nil {
					if err := res.batch.Release(); err != nil {
						a.Errs = append(a.Errs, err)
					}
					res.batch = nil
				}
				return a
			}
			a.Output = h.fit(rt, ev, res, prefix, &a.Errs)
		}
	}
	if err := res.Commit(); err != nil {
		a.Errs = append(a.Errs, err)
	}
	return a
}

// limit is the handler's byte bound for rt.
func (h *Handler) limit(rt agentrt.Runtime) int {
	if h.MaxBytes > 0 {
		return h.MaxBytes
	}
	return Limit(rt)
}

// fit renders prefix and the reminder for rt within the byte bound. The
// nudges that do not fit, the last shown first, go back to the queue for
// the next prompt, and the reminder says so: a committed nudge is gone, so
// none may be cut from the text after it is claimed. Only when the rest
// still does not fit is the text cut, at a line, saying so.
func (h *Handler) fit(rt agentrt.Runtime, ev Event, res *Result, prefix string, errs *[]error) []byte {
	limit := h.limit(rt)
	r := res.Reminder
	out := render(rt, ev, prefix+r.String())
	if len(out) <= limit {
		return out
	}
	if len(r.Nudges) > 0 && res.batch != nil {
		shown := slices.Clone(r.Nudges)
		slices.SortStableFunc(shown, ShownFirst)
		partial := r.Partial
		for back := 1; len(shown) > 0 && len(out) > limit; back++ {
			shown = shown[:len(shown)-1]
			r.Nudges = shown
			r.Partial = fmt.Sprintf("%d of your nudges did not fit; they stay queued for your next prompt", back)
			if partial != "" {
				r.Partial = partial + "; " + r.Partial
			}
			out = render(rt, ev, prefix+r.String())
		}
		if err := res.batch.Keep(func(n *nudgeq.Nudge) bool { return slices.Contains(shown, n) }); err != nil {
			*errs = append(*errs, err)
		}
	}
	if len(out) <= limit {
		return out
	}
	return cut(rt, ev, prefix+r.String(), limit)
}

// cut keeps the most whole lines of text whose rendering for rt, with a
// note saying it was cut, fits in limit bytes.
func cut(rt agentrt.Runtime, ev Event, text string, limit int) []byte {
	lines := strings.SplitAfter(text, "\n")
	with := func(k int) []byte {
		kept := strings.Join(lines[:k], "")
		note := ""
		if strings.Count(kept, "<system-reminder>") > strings.Count(kept, "</system-reminder>") {
			note = "</system-reminder>\n"
		}
		note += "<system-reminder>\nmailfs cut this reminder short to fit the hook's limit; run \"mailfs inbox\" to see all your mail (nudges not shown stay queued).\n</system-reminder>\n"
		return render(rt, ev, kept+note)
	}
	// The rendering grows with k: the largest k that fits, by bisection.
	lo, hi := 0, len(lines)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(with(mid)) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return with(lo)
}

// eventName is rt's name for ev, for its hookSpecificOutput ("" where
// rt has no such event).
func eventName(rt agentrt.Runtime, ev Event) string {
	switch {
	case rt == agentrt.Copilot && ev == Stop:
		return "agentStop"
	case rt != agentrt.Claude && rt != agentrt.Codex && rt != agentrt.Qwen && rt != agentrt.Gemini:
		return ""
	case rt == agentrt.Gemini && ev == PromptSubmit:
		return "BeforeAgent"
	case rt == agentrt.Gemini && ev == PostTool:
		return "AfterTool"
	case rt == agentrt.Gemini && ev == Stop:
		return "AfterAgent"
	case ev == SessionStart:
		return "SessionStart"
	case ev == PromptSubmit:
		return "UserPromptSubmit"
	case ev == PostTool:
		return "PostToolUse"
	case ev == Stop:
		return "Stop"
	}
	return ""
}

// NoAgent is what a session-start hook that was given no agent adds to
// the session's context, in rt's format: that no mail reaches this
// session, and how to name its agent. A shared worktree's hooks (the
// plugin's) read $MAILFS_AGENT; a session started without it would
// otherwise get no mail and no word of why.
func NoAgent(rt agentrt.Runtime) []byte {
	return render(rt, SessionStart, "mailfs: this session has no agent, so no mail or nudge reaches it and no doorbell rings. "+
		"Start it with MAILFS_AGENT set to the agent's name (a shared worktree's mailfs hooks read it from the environment), "+
		"or name the agent in the hook commands (mailfs setup <runtime> --agent NAME). Tell the person running this session.")
}

// render writes added context in rt's documented format; "" is nothing.
func render(rt agentrt.Runtime, ev Event, text string) []byte {
	if text == "" {
		return nil
	}
	if rt == agentrt.Plain {
		return []byte(text)
	}
	return marshal(map[string]any{
		"hookSpecificOutput": map[string]string{"hookEventName": eventName(rt, ev), "additionalContext": text},
	})
}

// marshal writes v as one line of JSON, without HTML escaping.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.Bytes()
}

// handoffs renders the agent's unread handoff notes, newest first, for the
// start of a session: mail of type "handoff" that the agent sent itself.
// A "handoff" from anyone else is ordinary mail, listed with its true
// sender: no other agent can speak as the agent's previous session.
func (h *Handler) handoffs(agent string, errs *[]error) string {
	msgs, err := h.Store.List(maildir.Address{Kind: maildir.KindAgent, Name: agent}, maildir.ListOptions{})
	if err != nil {
		*errs = append(*errs, err)
		return ""
	}
	var notes []*maildir.Message
	for _, m := range msgs {
		if from, err := maildir.ParseAgent(m.From); m.Type == HandoffType && err == nil && from == agent {
			notes = append(notes, m)
		}
	}
	if len(notes) == 0 {
		return ""
	}
	slices.Reverse(notes)
	var b strings.Builder
	b.WriteString("<system-reminder>\n")
	fmt.Fprintf(&b, "Handoff from your previous session (mailfs read %s <id> marks a note done):\n", agent)
	for i, m := range notes {
		if i == maxHandoffs {
			fmt.Fprintf(&b, "… and %d older handoff note(s) (mailfs inbox %s lists them).\n", len(notes)-i, agent)
			break
		}
		body := neutral(m.Body, true)
		if len(body) > maxHandoffBody {
			body = strings.ToValidUTF8(body[:maxHandoffBody], "") + fmt.Sprintf("\n… (cut: mailfs read %s %s shows it whole)", agent, neutral(m.ID, false))
		}
		fmt.Fprintf(&b, "--- %s, %s: %s\n%s\n", neutral(m.ID, false), m.Timestamp.UTC().Format(time.RFC3339), Short(neutral(m.Subject, false)), body)
	}
	b.WriteString("</system-reminder>\n")
	return b.String()
}

// HandoffType is the type of a handoff note: mail to oneself for the next
// session.
const HandoffType = "handoff"

// postTool tells an agent in the middle of its work of urgent news only:
// urgent and high-priority unread mail, urgent nudges, not shown yet this
// turn. It reads nothing more often than PostToolEvery, and says nothing
// when it cannot record that it ran: parallel calls speak once.
func (h *Handler) postTool(ctx context.Context, rt agentrt.Runtime, agent string) Answer {
	now := h.now()
	every := h.PostToolEvery
	if every <= 0 {
		every = DefaultPostToolEvery
	}
	due := false
	if err := h.update(agent, func(st *state) bool {
		if !st.LastPostTool.IsZero() && now.Sub(st.LastPostTool) < every && !now.Before(st.LastPostTool) {
			return false
		}
		due = true
		st.LastPostTool = now
		return true
	}); err != nil || !due {
		return Answer{Errs: slices.DeleteFunc([]error{err}, func(e error) bool { return e == nil })}
	}
	res := h.Collect(ctx, agent)
	if res.batch != nil {
		if err := res.batch.Keep(func(n *nudgeq.Nudge) bool { return n.Priority == nudgeq.Urgent }); err != nil {
			res.Errs = append(res.Errs, err)
		}
		res.Reminder.Nudges = res.batch.Nudges
		res.Reminder.Refused = nil // told at the prompt, with the rest
	}
	if res.Reminder != nil {
		res.Reminder.Mail = slices.DeleteFunc(res.Reminder.Mail, func(m *maildir.Message) bool {
			return m.Priority != maildir.Urgent && m.Priority != maildir.High
		})
	}
	return h.deliver(rt, PostTool, agent, Input{}, res, "")
}

// maxStopLines is how many messages a stop's reason names.
const maxStopLines = 10

// stop holds an agent that would stop while urgent or high-priority mail
// waits unread that it was not shown in this turn: never twice for the same
// messages, never when the runtime says this stop already follows a block,
// never more than MaxStopBlocks times in a row, and never without a record
// of the block (so a state that cannot be written never blocks).
func (h *Handler) stop(rt agentrt.Runtime, agent string, in Input) Answer {
	var a Answer
	msgs, err := h.Store.List(maildir.Address{Kind: maildir.KindAgent, Name: agent}, maildir.ListOptions{ByPriority: true})
	if err != nil {
		a.Errs = append(a.Errs, err)
		return a
	}
	var pressing []*maildir.Message
	for _, m := range msgs {
		if m.Priority == maildir.Urgent || m.Priority == maildir.High {
			pressing = append(pressing, m)
		}
	}
	max := h.MaxStopBlocks
	if max <= 0 {
		max = DefaultMaxStopBlocks
	}
	var out []byte
	err = h.update(agent, func(st *state) bool {
		st.LastSeen, st.LastEvent = h.now(), Stop
		if len(pressing) == 0 {
			// Nothing pressing: the count of blocks in a row starts again.
			st.StopBlocks, st.StopBlocked = 0, nil
			return true
		}
		var fresh []*maildir.Message
		for _, m := range pressing {
			if !slices.Contains(st.StopBlocked, m.ID) && !slices.Contains(st.TurnShown, m.ID) {
				fresh = append(fresh, m)
			}
		}
		if in.StopHookActive || len(fresh) == 0 || st.StopBlocks >= max {
			// The agent stops: the row of blocks ends here.
			st.StopBlocks = 0
			return true
		}
		st.StopBlocks++
		st.StopBlocked = nil
		for _, m := range pressing {
			st.StopBlocked = append(st.StopBlocked, m.ID)
		}
		var listed int
		out, listed = h.stopAnswer(rt, agent, fresh, len(pressing)-len(fresh))
		// Only what the block names is shown: the "and N more" are left to
		// the next prompt or doorbell to name.
		for _, m := range fresh[:listed] {
			st.shown(m.ID)
		}
		return true
	})
	if err != nil {
		a.Errs = append(a.Errs, err)
		return a // no record, no block
	}
	a.Output = out
	return a
}

// stopAnswer is the block of a stop for rt naming the fresh messages (and
// counting those already shown), within the byte bound, and how many of
// fresh it names (the first ones; the rest are counted).
func (h *Handler) stopAnswer(rt agentrt.Runtime, agent string, fresh []*maildir.Message, told int) (out []byte, listed int) {
	limit := h.limit(rt)
	for lines := min(len(fresh), maxStopLines); ; lines-- {
		var b strings.Builder
		fmt.Fprintf(&b, "Before you stop: %d urgent or high-priority message(s) wait unread for %s. Read them (mailfs read %s <id>) and act on them:", len(fresh)+told, agent, agent)
		for _, m := range fresh[:lines] {
			fmt.Fprintf(&b, "\n- [%s] %s from %s: %s", m.Priority, neutral(m.ID, false), neutral(m.From, false), Short(neutral(m.Subject, false)))
		}
		if more := len(fresh) - lines + told; more > 0 {
			fmt.Fprintf(&b, "\n- and %d more (mailfs inbox %s --by priority)", more, agent)
		}
		switch rt {
		case agentrt.Plain:
			out = []byte(b.String() + "\n")
		case agentrt.Gemini:
			out = marshal(map[string]string{"decision": "deny", "reason": b.String()}) // AfterAgent: the reason becomes a new turn
		default:
			out = marshal(map[string]string{"decision": "block", "reason": b.String()})
		}
		if len(out) <= limit || lines == 0 {
			return out, lines
		}
	}
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// neutral keeps message text inside its block (see Neutral).
func neutral(s string, multiline bool) string { return Neutral(s, multiline) }
