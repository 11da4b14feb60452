// Package gitsync keeps the state trees of a town's hosts alike through
// git, with no server of mailfs's own: any ordinary remote (a bare
// repository, a forge) and the git command are enough.
//
// Call [Syncer.Sync] for one cycle, or [Syncer.Every] for a loop; under a
// per-host lock it fetches, merges the two sides path by path, writes what
// arrived durably and pushes. [Syncer.Recall] brings back archived mail a
// sync pruned from the working tree. Each object has a home host (see
// [maildir.Store.MayChange]) and only its home renames, rewrites or
// deletes its files, so hosts never conflict; what still could meet stops
// the sync with a [*ConflictError], nothing changed.
//
// Before it lands or pushes anything, a no-loss gate that does not trust
// the merge refuses ([ErrWouldLose]) a change dropping a message file no
// home removed; a push the remote refuses ends the sync ([ErrPushRefused]).
//
// # Caveats
//
// The repository is the root itself (the .chipset directory), created by
// the first Sync: do not also commit the root in an enclosing repository,
// nor run git commands of your own in it while a sync runs. Nudges
// (runtime/) never travel. A tombstone lives [GoneFor]: a host offline
// longer can bring back a message deleted since. A remote rewritten other
// than by winding back or squashing is refused with [ErrRewritten].
//
// Why it cannot conflict, lose, resurrect or claim twice, one cycle step
// by step, stopped syncs and rewritten remotes: docs/sync-protocol.md.
package gitsync
