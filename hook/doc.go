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
// The budget holds by construction. Collect makes, on the caller's
// goroutine, only operations that check the budget before each file they
// touch: the claim (which stops at its next nudge), and the mail read
// when the folder's index describes it as it stands and names at most a
// few unread files ([maildir.Store.ListFromIndex]). A read that needs the
// folder listed, and every file in it stat-ed, runs on a goroutine of its
// own, and Collect stops waiting for it when the budget is spent. What
// this cannot bound is a file operation on the caller's goroutine that
// hangs (a dead network disk): that is the one operation past the budget
// the promise allows, and on such a disk the claim, made first, would
// hang the same way.
//
// An agent is always the agent: a group, queue or channel that shares its
// name never takes its reminders.
package hook
