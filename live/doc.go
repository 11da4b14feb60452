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
// processes' messages, and ends with its session leaving no lock. A copy
// is Delivered only on evidence from inside the session that the runtime
// made the doorbell the model's input; without it, Rung.
//
// # Caveats
//
// Evidence says the doorbell went to the model, not that the model acted
// on it. What each runtime's evidence is, the receipts, and what live
// cannot see: docs/live-delivery.md.
package live
