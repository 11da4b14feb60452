// Package hook is what agent runtimes' hooks run: the prompt hook's
// reminder of unread mail and queued nudges, within a time budget.
//
// The command line ("mailfs check --inject"), and every other entry point
// that answers a hook, call this package, so the rules below are written
// once.
//
// # Guarantees
//
// [Collect] never blocks past its budget by more than one file operation,
// and never loses a nudge: nudges are claimed (renamed) first, shown by
// the caller, and removed only by [Result.Commit] after the caller has
// printed them. Nudges claimed but not shown, because the budget ran out
// first, go straight back to the queue before Collect returns, so the next
// hook sees them; only a process killed between print and commit can show
// a nudge twice, never zero times.
//
// An agent is always the agent: a group, queue or channel that shares its
// name never takes its reminders.
package hook
