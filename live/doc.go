// Package live pushes a short doorbell into a running agent session the
// moment its agent's mail lands, and says truthfully what became of it.
//
// A [Deliverer] serves one session through its [Door]: Claude Code's
// messaging socket ([ClaudeDoor]), Qwen Code's cross-session protocol
// ([QwenDoor]), or typed input into a tmux pane ([TmuxDoor]). It watches
// the agent's mailbox and nudge queue and, each time it wakes, decides
// first and then acts: plan (a pure function of what it knows, tested by
// a table) says what is due, what waits and why; then it claims the
// nudges that may ride, builds the doorbell, rings, and records.
//
// # What a deliverer promises
//
//   - It never loses mail. A doorbell is only a pointer: the message stays
//     in the mailbox, the one copy, whatever becomes of the doorbell. A
//     ring that fails, a session that drops it, a deliverer killed with -9:
//     the mail waits for the next doorbell, the hooks, or the agent's look.
//   - It never floods a session. Urgent mail rings at once after a quiet
//     spell; the rest of a burst waits for Spacing (2 s) and rides the next
//     doorbell, never more than PerMinute (10) doorbells a minute, at most
//     MaxLines messages and MaxBytes bytes each. Normal mail rings at most
//     once per Every; under do not disturb only urgent mail rings.
//   - It never types over a person: the tmux door waits while the pane's
//     input line holds text or a person typed in the last 2 s.
//   - It never writes what the runtime would not show the model: a Claude
//     Code or Qwen Code session whose inbound setting holds or refuses
//     messages from other processes is written nothing (held, refused).
//   - It ends with its session (it checks every Check, 500 ms), and leaves
//     no lock behind; its record goes too, unless the session rang
//     doorbells (then it is kept, ended, for an hour, for receipts).
//
// # What "delivered" means
//
// Writing a doorbell proves only that the session took the bytes: a
// flooded Claude Code has accepted lines on its socket and passed only
// some on to the model. So every doorbell ends with a ring mark (a fresh
// 64-bit nonce, hook.RingMark), and a message is Delivered only on
// evidence, from inside the session, that the runtime made a doorbell
// naming it the model's input:
//
//   - any runtime whose prompt hook mailfs installs: the hook finds the
//     mark in the prompt it is handed (an idle session woken into a turn
//     by the doorbell) and leaves <nonce>.seen beside the record ([Confirm]);
//   - Claude Code: its transcript shows the mark on a line that is not a
//     queue operation (the queued message attached to the next request, a
//     new turn's user message, the request itself); on an enqueue line
//     only, the doorbell is queued, and is not rung again;
//   - Qwen Code: its chat record shows the mark in a user line (the
//     cross_session_message notification of the turn it joined);
//   - tmux: the mark shown on the pane off the input line: the program
//     took the line as a submitted message. That is weaker than the
//     others (the program drew it; nothing says the model was sent it),
//     and where the runtime in the pane runs mailfs's prompt hook (Codex,
//     Gemini CLI after "mailfs setup"), the hook's evidence comes too.
//
// Without evidence a message is Rung. A doorbell with none after
// ConfirmWait (15 s), that the runtime does not show queued, in a session
// that is not busy, is rung again with a fresh mark (it names the same
// messages: a repeat is safe) — at most MaxRings (3) doorbells per
// message; then the message is recorded unconfirmed, and the receipt's
// rung is final. Evidence that arrives late still confirms.
//
// # Receipts
//
// [WaitDelivered] answers per copy: Delivered (evidence seen), Read (read
// before its doorbell was confirmed), Rung (no evidence yet; final once
// given up on, or once the session ended), Held (dnd, batched, spacing,
// retrying, a person is typing, held by the session), Refused (the session
// refuses other processes' messages), NoSession (no deliverer runs: the
// hooks will show it).
//
// # What it cannot see
//
//   - The model's reading: evidence says the doorbell went to the model,
//     not that the model acted on it. Read (the agent ran mailfs read) is
//     the only stronger signal, and it is reported as such.
//   - A Qwen Code turn in progress: Qwen's registry does not say busy or
//     idle, so a doorbell not yet in the chat record is taken as queued
//     and is never rung again; it is given up on after ten minutes.
//   - A tmux program whose prompt is text (a shell's "user@host:~$ "): its
//     input line never looks empty, so the door always waits. The door is
//     for agents' TUIs, whose prompts are glyphs ("›", "> ", a box).
//   - Claude Code's precedence between settings scopes: the most
//     restrictive crossSessionInbound found is taken, so a doorbell is
//     never reported delivered while any scope may hold it, at the cost of
//     holding one a session would have accepted.
package live
