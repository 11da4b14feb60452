// Package live pushes a short doorbell into a running agent session the
// moment its agent's mail lands, and says truthfully what became of it.
//
// A [Deliverer] serves one session through its [Door] (Claude Code's
// messaging socket, Qwen Code's cross-session protocol, a plugin's pipe,
// a tmux pane); call its Run, which returns when the session ends (or its
// context does, or [Deliverer.Close] is called) with nothing of it left
// running. Senders ask [WaitDelivered] what became of
// their copies; a session's prompt hook calls [Confirm] with the ring
// marks it saw.
//
// # Guarantees
//
// A doorbell is only a pointer: the mail stays in the mailbox, so a lost
// doorbell loses nothing. A deliverer never floods a session (spacing, a
// cap a minute, bounded doorbells), never types over a person, never
// writes to a session whose inbound setting holds or refuses other
// processes' messages, and ends with its session leaving no lock. One
// evidence rule for every door: a copy is [Delivered] only when the
// runtime's own record shows the model produced output for a turn whose
// input held the doorbell's ring mark; the session taking it in (a hook
// saw the mark, a queued or pasted prompt) is [Submitted], never
// Delivered. The confirmation is a pure function the deliverer acts on;
// receipts only move forward, across the session's deliverers.
//
// # Caveats
//
// An answer says the model was given the turn, not that it acted on the
// mail. Each runtime's evidence, the receipts, why the rule cannot lie and
// what it cannot see: docs/live-delivery.md.
package live
