// Package gitsync keeps the state trees of a town's hosts alike through
// git, with no server of mailfs's own: any ordinary remote (a bare
// repository, a forge) and the git command are enough.
//
// # Why it cannot conflict
//
// Each mailbox, queue, channel and group has a home host (see
// [maildir.Store.MayChange]). Any host adds files anywhere; only the home
// host renames, rewrites or deletes an object's files. So two hosts never
// change the same path, and replaying one host's commit on top of
// another's never meets a conflict, never resurrects a message the other
// deleted and never leaves one in two places. Two things could still
// meet, and [Syncer.Sync] settles both before it commits: a file name
// added on two hosts (a script's drop, two first claims of one home) — a
// message added here is renamed to carry the host, a home record yields
// to the one already pushed — and a group or channel created on two hosts
// at once, which is reported for a person to settle, with nothing changed.
//
// # One cycle
//
// Under a per-host lock (runtime/sync.lock), Sync fetches, settles added
// names as above, commits the state tree, replays the commit on the
// remote's branch (rebase with exact renames only, no directory-rename
// guessing, uncommitted changes stashed and put back), makes the files
// that arrived private (0600/0700), checks that no message id is in two
// places, and pushes, starting again from the fetch if another host pushed
// first. If git stops on anything, Sync aborts the rebase and puts the
// repository back as it was — every local change kept, uncommitted — and
// returns a [*ConflictError] naming the paths: it never commits conflict
// markers.
//
// # Bounded tree
//
// Archived mail of local homes older than [Syncer.PruneAfter] leaves the
// working tree in a commit of its own: it stays in git history, and
// [Syncer.Recall] brings a message back. The tree, and so git's status,
// commit and merge costs, tracks the live mail, not everything ever sent.
//
// # Caveats
//
// The repository is the root itself (the .chipset directory), created by
// the first Sync; do not also commit the root in an enclosing repository.
// Git writes the files it checks out in place, so a reader racing a sync
// may skip a half-written file that arrived from another host, with a
// warning; the next read sees it whole. Nudges (runtime/) never travel:
// they are for agents on the same host.
package gitsync
