package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
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

// A Runtime is an agent runtime whose hook format mailfs speaks.
type Runtime string

// The runtimes.
const (
	Claude Runtime = "claude" // Claude Code
	Gemini Runtime = "gemini" // Gemini CLI
	Plain  Runtime = "plain"  // plain text on stdout, for anything else
)

// Input is what a runtime sends a hook on stdin; every runtime's fields
// that mailfs reads. Unknown fields are ignored.
type Input struct {
	SessionID      string `json:"session_id"`
	HookEventName  string `json:"hook_event_name"`
	StopHookActive bool   `json:"stop_hook_active"` // Claude Code: this stop follows a stop hook's block
	Source         string `json:"source"`           // Claude Code's SessionStart: startup, resume, clear, compact
}

// Defaults of a Handler's zero fields.
const (
	DefaultPostToolEvery = 2 * time.Minute
	DefaultMaxStopBlocks = 3
	MaxOutput            = 16 << 10 // bytes of context a hook adds at most
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
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// An Answer is what a hook prints: Output on stdout (may be empty) and
// Errs for stderr. The exit status is always 0.
type Answer struct {
	Output []byte
	Errs   []error
}

// state is what a handler remembers of one agent between calls, in
// runtime/hook/<agent>.json (never committed).
type state struct {
	LastSeen     time.Time `json:"last_seen"`  // the last hook call, of any event
	LastEvent    Event     `json:"last_event"` // its event
	LastPostTool time.Time `json:"last_post_tool"`
	StopBlocks   int       `json:"stop_blocks"`  // consecutive stops blocked
	StopBlocked  []string  `json:"stop_blocked"` // ids the last block named
}

// Handle answers event ev of runtime rt for agent, given the runtime's
// input. Problems are in the answer's Errs; the answer never asks the
// runtime to fail.
func (h *Handler) Handle(ctx context.Context, rt Runtime, ev Event, agent string, in Input) Answer {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return Answer{Errs: []error{err}}
	}
	if !slices.Contains(Events, ev) {
		return Answer{Errs: []error{fmt.Errorf("hook: unknown event %q (want %s)", ev, eventNames())}}
	}
	a := h.handle(ctx, rt, ev, agent, in)
	h.seen(agent, ev, &a.Errs)
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

// Seen reports when agent's hooks last ran (to within 30 seconds), and for
// which event: what "mailfs doctor" shows. A zero time means never (or not since the state
// was lost with runtime/).
func (h *Handler) Seen(agent string) (time.Time, Event, error) {
	var errs []error
	st, _ := h.state(agent, &errs)
	return st.LastSeen, st.LastEvent, errors.Join(errs...)
}

// seenEvery is how fresh the record of a hook's last call is kept: a call
// within this time of the recorded one, for the same event, writes nothing.
const seenEvery = 30 * time.Second

// seen records that agent's hook ran for ev, at most once per seenEvery
// for the same event: what doctor shows needs no fresher, and a prompt hook
// then reads its state and writes nothing.
func (h *Handler) seen(agent string, ev Event, errs *[]error) {
	st, save := h.state(agent, errs)
	now := h.now()
	if st.LastEvent == ev && !st.LastSeen.After(now) && now.Sub(st.LastSeen) < seenEvery {
		return
	}
	st.LastSeen, st.LastEvent = now, ev
	save(st)
}

func (h *Handler) handle(ctx context.Context, rt Runtime, ev Event, agent string, in Input) Answer {
	switch ev {
	case PromptSubmit:
		res := h.Collect(ctx, agent)
		return h.context(rt, ev, res, res.Reminder.String())
	case SessionStart:
		res := h.Collect(ctx, agent)
		text := h.handoffs(agent, &res.Errs) + res.Reminder.String()
		return h.context(rt, ev, res, text)
	case PostTool:
		return h.postTool(ctx, rt, agent)
	case Stop:
		return h.stop(rt, agent, in)
	}
	return Answer{Errs: []error{fmt.Errorf("hook: unknown event %q (want %s)", ev, eventNames())}}
}

func eventNames() string {
	names := make([]string, len(Events))
	for i, e := range Events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// context wraps text as added context for rt, commits the result's nudges
// once the answer is built, and bounds its size.
func (h *Handler) context(rt Runtime, ev Event, res *Result, text string) Answer {
	a := Answer{Errs: res.Errs}
	text = fit(res, text, &a.Errs)
	if text != "" {
		a.Output = render(rt, ev, bound(text))
	}
	if err := res.Commit(); err != nil {
		a.Errs = append(a.Errs, err)
	}
	return a
}

// fit keeps a reminder's nudges within MaxOutput: the nudges that do not
// fit, the last shown first, go back to the queue for the next prompt, and
// the reminder says so. A committed nudge is gone, so none may be cut from
// the text after it is claimed. text is the reminder's text with what
// comes before it (the handoffs); fit returns it re-rendered.
func fit(res *Result, text string, errs *[]error) string {
	r := res.Reminder
	if len(text) <= MaxOutput || r == nil || len(r.Nudges) == 0 || res.batch == nil {
		return text
	}
	prefix := strings.TrimSuffix(text, r.String())
	shown := slices.Clone(r.Nudges)
	slices.SortStableFunc(shown, nudgeq.ShownFirst)
	back := 0
	for len(shown) > 0 && len(text) > MaxOutput {
		shown = shown[:len(shown)-1]
		back++
		r.Nudges = shown
		r.Partial = fmt.Sprintf("%d of your nudges did not fit; they stay queued for your next prompt", back)
		text = prefix + r.String()
	}
	if err := res.batch.Keep(func(n *nudgeq.Nudge) bool { return slices.Contains(shown, n) }); err != nil {
		*errs = append(*errs, err)
	}
	return text
}

// bound keeps text under MaxOutput, cutting at a line and saying so.
func bound(text string) string {
	if len(text) <= MaxOutput {
		return text
	}
	cut := strings.LastIndexByte(text[:MaxOutput-200], '\n')
	return text[:cut+1] + "<system-reminder>\nmailfs cut this reminder short; run \"mailfs inbox\" to see all your mail.\n</system-reminder>\n"
}

// render writes added context in rt's documented format.
func render(rt Runtime, ev Event, text string) []byte {
	if rt == Plain {
		return []byte(text)
	}
	name := map[Runtime]map[Event]string{
		Claude: {SessionStart: "SessionStart", PromptSubmit: "UserPromptSubmit", PostTool: "PostToolUse"},
		Gemini: {SessionStart: "SessionStart", PromptSubmit: "BeforeAgent", PostTool: "AfterTool"},
	}[rt][ev]
	return marshal(map[string]any{
		"hookSpecificOutput": map[string]string{"hookEventName": name, "additionalContext": text},
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

// handoffs renders the agent's unread handoff notes (mail of type
// "handoff"), newest first, for the start of a session.
func (h *Handler) handoffs(agent string, errs *[]error) string {
	msgs, err := h.Store.List(maildir.Address{Kind: maildir.KindAgent, Name: agent}, maildir.ListOptions{})
	if err != nil {
		*errs = append(*errs, err)
		return ""
	}
	var notes []*maildir.Message
	for _, m := range msgs {
		if m.Type == HandoffType {
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
	for _, m := range notes {
		fmt.Fprintf(&b, "--- %s, %s: %s\n%s\n", neutral(m.ID, false), m.Timestamp.UTC().Format(time.RFC3339), neutral(m.Subject, false), neutral(m.Body, true))
	}
	b.WriteString("</system-reminder>\n")
	return b.String()
}

// HandoffType is the type of a handoff note: mail to oneself for the next
// session.
const HandoffType = "handoff"

// postTool tells an agent in the middle of its work of urgent news only:
// urgent and high-priority unread mail, urgent nudges. It reads nothing
// more often than PostToolEvery.
func (h *Handler) postTool(ctx context.Context, rt Runtime, agent string) Answer {
	var a Answer
	st, save := h.state(agent, &a.Errs)
	now := h.now()
	every := h.PostToolEvery
	if every <= 0 {
		every = DefaultPostToolEvery
	}
	if !st.LastPostTool.IsZero() && now.Sub(st.LastPostTool) < every && now.After(st.LastPostTool) {
		return a
	}
	st.LastPostTool = now
	save(st)
	res := h.Collect(ctx, agent)
	a.Errs = append(a.Errs, res.Errs...)
	if res.batch != nil {
		if err := res.batch.Keep(func(n *nudgeq.Nudge) bool { return n.Priority == nudgeq.Urgent }); err != nil {
			a.Errs = append(a.Errs, err)
		}
		res.Reminder.Nudges = res.batch.Nudges
		res.Reminder.Refused = nil // told at the prompt, with the rest
	}
	res.Reminder.Mail = slices.DeleteFunc(res.Reminder.Mail, func(m *maildir.Message) bool {
		return m.Priority != maildir.Urgent && m.Priority != maildir.High
	})
	answer := h.context(rt, PostTool, res, res.Reminder.String())
	answer.Errs = append(a.Errs, answer.Errs...)
	return answer
}

// stop holds an agent that would stop while urgent or high-priority mail
// waits unread: never twice for the same messages, never when the runtime
// says this stop already follows a block, never more than MaxStopBlocks
// times in a row.
func (h *Handler) stop(rt Runtime, agent string, in Input) Answer {
	var a Answer
	st, save := h.state(agent, &a.Errs)
	msgs, err := h.Store.List(maildir.Address{Kind: maildir.KindAgent, Name: agent}, maildir.ListOptions{ByPriority: true})
	if err != nil {
		a.Errs = append(a.Errs, err)
		return a
	}
	var pressing []*maildir.Message
	var ids []string
	for _, m := range msgs {
		if m.Priority == maildir.Urgent || m.Priority == maildir.High {
			pressing = append(pressing, m)
			ids = append(ids, m.ID)
		}
	}
	max := h.MaxStopBlocks
	if max <= 0 {
		max = DefaultMaxStopBlocks
	}
	fresh := slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(st.StopBlocked, id) })
	if len(pressing) == 0 {
		// Nothing pressing: the count of blocks in a row starts again.
		if st.StopBlocks != 0 || len(st.StopBlocked) != 0 {
			st.StopBlocks, st.StopBlocked = 0, nil
			save(st)
		}
		return a
	}
	if in.StopHookActive || !fresh || st.StopBlocks >= max {
		return a
	}
	st.StopBlocks++
	st.StopBlocked = ids
	save(st)
	var b strings.Builder
	fmt.Fprintf(&b, "Before you stop: %d urgent or high-priority message(s) wait unread for %s. Read them (mailfs read %s <id>) and act on them:", len(pressing), agent, agent)
	for i, m := range pressing {
		if i == 10 {
			fmt.Fprintf(&b, "\n- and %d more (mailfs inbox %s --by priority)", len(pressing)-i, agent)
			break
		}
		fmt.Fprintf(&b, "\n- [%s] %s from %s: %s", m.Priority, neutral(m.ID, false), neutral(m.From, false), neutral(m.Subject, false))
	}
	decision := "block"
	if rt == Gemini {
		decision = "deny" // AfterAgent: the reason becomes a new turn
	}
	if rt == Plain {
		a.Output = []byte(b.String() + "\n")
		return a
	}
	a.Output = marshal(map[string]string{"decision": decision, "reason": b.String()})
	return a
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// state reads agent's hook state and returns a function that saves it.
// Problems go to errs: a hook without its state still answers.
func (h *Handler) state(agent string, errs *[]error) (state, func(state)) {
	var st state
	name := agent + ".json"
	root, err := chipset.New(h.Store.Dir())
	if err != nil {
		*errs = append(*errs, err)
		return st, func(state) {}
	}
	d, err := root.Dir(StateDir)
	if d != nil {
		data, _, err := d.ReadFile(name, 1<<16)
		switch {
		case err == nil:
			if err := json.Unmarshal(data, &st); err != nil {
				*errs = append(*errs, fmt.Errorf("hook: %s: %w (starting afresh)", d.Join(name), err))
			}
		case !errors.Is(err, fs.ErrNotExist):
			*errs = append(*errs, err)
		}
		d.Close()
	} else if err != nil {
		*errs = append(*errs, err)
	}
	root.Close()
	return st, func(st state) {
		root, err := chipset.New(h.Store.Dir())
		if err != nil {
			*errs = append(*errs, err)
			return
		}
		defer root.Close()
		r, err := root.Open(false) // state is kept only in a town that exists
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			*errs = append(*errs, err)
			return
		}
		d, err := r.MkdirAll(StateDir)
		if err != nil {
			*errs = append(*errs, err)
			return
		}
		defer d.Close()
		data, _ := json.Marshal(st)
		// Advisory, and rewritten by every hook call: atomic, not fsynced.
		if err := d.ReplaceEphemeral(name, append(data, '\n')); err != nil {
			*errs = append(*errs, err)
		}
	}
}

// StateDir holds each agent's hook state: runtime/hook/<agent>.json, never
// committed.
const StateDir = "runtime/hook"

// neutral keeps message text inside its block (see nudgeq.Neutral).
func neutral(s string, multiline bool) string { return nudgeq.Neutral(s, multiline) }
