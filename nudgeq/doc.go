// Package nudgeq is the nudge queue: short, ephemeral pokes ("check your
// mail", "status?") that reach a busy agent at its next turn, through its
// prompt hook, and vanish once seen or once stale. Nudges are not mail.
//
// # On-disk format
//
//	<root>/runtime/nudge/<agent>/<unixnano>-<8 hex>.json        queued
//	<root>/runtime/nudge/<agent>/<name>.claimed.<unixnano>-<hex> being drained
//	<root>/runtime/nudge/<agent>/refused/<unixnano>-<8 hex>.json a refusal to report
//
// The name starts with the enqueue time in nanoseconds, zero-padded to 19
// digits, so names sort first in, first out. The content is sorted-key
// JSON: {"expires_at", "mail_id" (optional), "message", "priority",
// "sender", "timestamp"}, priority "normal" or "urgent".
//
// # Guarantees
//
// Enqueue is atomic (a dot-temp renamed into place without replacing
// anything) but, unlike mail, not fsynced: a nudge survives a crash of the
// process that queued it, not a power cut. A queue holds at most
// [Queue.MaxDepth] nudges, also under concurrent enqueuers: they take turns
// (an advisory flock on the queue directory) to count and write, so the cap
// is exact. A refusal is an error for the sender, and leaves a note that
// the recipient sees at its next drain.
//
// A drainer claims each nudge by renaming it to a ".claimed.<time>-<rand>"
// name: among concurrent drainers exactly one rename succeeds, so each
// nudge is delivered to one drainer. The claimed files are removed only
// after the caller has shown the nudges ([Batch.Commit]); a claim older than
// [Queue.OrphanAfter] (its claimant died) goes back to the queue at the next
// drain. A dead drainer therefore causes at most a redelivery, never a loss.
// The claim time is in the name because a rename does not change a file's
// mtime.
package nudgeq
