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
// # Why it cannot lose, resurrect or claim twice
//
// The invariant: after any sequence of syncs, kills, force-pushes by a
// person (wound back, squashed, rewritten dropping mail, wound back and
// squashed in one push, put back from any host) and the commands
// mailfs's refusals name, every message any host acknowledged is in
// exactly one place on every host unless its home deleted or moved it;
// nothing a home deleted or moved comes back; no queue item is claimed
// twice. It rests on three records that, unlike git history, no force-push
// can cut:
//
//   - Tombstones (state/gone/<host>/<day>.txt, committed, see [GoneDir]):
//     a home's sync buries each message that leaves one of its objects
//     for good (deleted, or claimed out of a queue) and raises it when it
//     moves back in (a release). No put-back, adopt or first sync adds a
//     buried message, and a home undoes a stale add of one it buried, so
//     what a home deleted or moved never comes back, whatever history a
//     person left.
//   - The outbox (.git/mailfs-outbox.json, per host, never pushed): a
//     send to an object homed on another host is the sender's to keep
//     until a commit made by that home's sync descends from the one that
//     pushed it — from then on the home holds it in its working tree and
//     answers for it (its own adopt keeps its homes' files). A sync that
//     builds on a rewrite (adopt, a put-back) puts back every entry the
//     rewrite lacks, unless its home has it elsewhere or buried it. So a
//     rewrite that drops a send made before the home saw it loses nothing.
//   - The home's own tree: a home takes no other host's change or
//     removal of one of its files (only a home changes them, so that is a
//     stale version put back by a host that saw less), nor an arriving
//     copy of a message it holds in the object's other folder; it undoes
//     either on the remote. An adopt keeps this host's homes' files as it
//     last synced them, and drops from the rewrite a message its homes
//     hold elsewhere (archived since) or buried.
//
// And a last check, apart from all of the above: the no-loss gate
// compares the commit a sync is about to land and push with the tree it
// snapshotted and its outbox, and refuses ([ErrWouldLose]) a change that
// drops a message file no home removed (its id elsewhere in the result,
// its home's tombstone, or its home's sync the author of the removal).
// A remote with no branch (new, deleted, re-created) is never a
// deletion: this host pushes its whole tree with its history. A push the
// remote refuses ends the sync ([ErrPushRefused]); only a race is
// retried. A host name is held by one machine ([ErrHostTaken]).
//
// A first sync of a root that already holds mail, with no commit in
// common with the remote (a backup, an rsync, a copied disk; two copies
// that both claimed every home), trusts each object's home as the remote
// has it: a message of another host's object (or one whose home record
// this host loses to one pushed first) that its home buried, moved
// (its id elsewhere on the remote) or changed is left as the remote has
// it and never pushed; sends the copy made itself go out; a message of
// another host's object that no one can vouch for is set aside under
// [HeldDir].
//
// What it cannot see: a tombstone lives [GoneFor] (90 days, counted by
// the later and the earlier of this host's clock and the town's); a host
// offline longer than that which still holds a message deleted since is
// stopped by the gate, naming the files, unless its home's sync is
// still seen to have removed them. An outbox entry whose home never syncs again stays until
// it does (the message is safe; the entry is a few bytes). A person who
// edits the tree by hand (adding a file under another host's object)
// is stopped by the sync, not guessed at. The refusal's `git push --force`
// is still a person's choice: after it, the hosts that took the squash
// refuse and name --adopt, and their adopt keeps what the push dropped of
// theirs.
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
