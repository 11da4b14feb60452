// Package gitsync keeps the state trees of a town's hosts alike through
// git, with no server of mailfs's own: any ordinary remote (a bare
// repository, a forge) and the git command are enough.
//
// # Why it cannot conflict
//
// Each mailbox, queue, channel and group has a home host (see
// [maildir.Store.MayChange]). Any host adds files anywhere; only the home
// host renames, rewrites or deletes an object's files. So two hosts never
// change the same path, and merging their work path by path never meets a
// conflict, never resurrects a message the other deleted and never leaves
// one in two places. What could still meet is settled: a message name
// added on two hosts (a script's drop) is kept twice, this host's renamed
// to carry the host; a home record added on two hosts yields to the one
// already pushed, and what this host changed under that home is undone; a
// group or channel created on two hosts at once, or a change made by hand
// to another host's object, stops the sync with a [*ConflictError] and
// nothing changed.
//
// # One cycle
//
// Under a per-host lock (runtime/sync.lock), Sync recovers what a stopped
// sync left (see below), fetches, serves claim requests for local queues
// ([maildir.Store.ServeRequests]), snapshots the tree (git add -A and
// write-tree: git only reads files), merges the two sides' diffs against
// their last common commit path by path, writes what the other hosts
// changed into the tree through internal/durable (whole files, fsynced,
// private, never over a file a local writer made), moves the branch and
// index with reset --mixed, checks that no message id is in two places,
// and pushes, starting again from the fetch if another host pushed first.
// Git never writes the working tree: a write made during a sync is in its
// snapshot or is committed by the next sync, and is never undone.
//
// # Stopped syncs and rewritten remotes
//
// Writing what arrived is journalled (.git/mailfs-apply.json): files are
// staged under dot-names, the journal marked ready, then renamed into
// place. The next Sync removes a landing that never got ready and
// finishes one that did; it also removes git's stale lock files and ends
// a rebase an older mailfs left, writing back what its checkout and
// autostash took out of the tree. A remote wound back by force-push gets
// this host's copy back; one squashed to the same files is adopted;
// anything else is refused with [ErrRewritten].
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
// Do not run git commands of your own in the repository while a sync
// runs. Nudges (runtime/) never travel: they are for agents on the same
// host.
package gitsync
