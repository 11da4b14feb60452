// Package townsim is mailfs's town soak: a whole Gas Town on two hosts,
// run through the command line exactly as agents and scripts use it, with
// faults, and checked end to end. It has no API; it is its tests.
//
// TestSoak builds the mailfs command, makes two hosts (separate roots,
// named alpha and beta; beta without the indexes and on a "file system"
// without renameat2's flags, so every move there takes the link-and-unlink
// fallbacks) that sync through a bare git remote, each host running
// "mailfs sync --every" as docs/machines.md tells a town to, and runs the
// town's agents as goroutines that run the command: a mayor posting WORK
// to a queue homed on alpha, polecats on both hosts claiming, marking
// their items done and reporting POLECAT_DONE, a witness sending
// MERGE_READY and nudging, a refinery answering MERGED or MERGE_FAILED
// (the rework goes back to the queue), ESCALATION and HANDOFF mail with
// replies in threads, agents blocking in wait, the sweep and fsck --repair
// on timers. People act too: an overseer confirms release, reassign and
// nudge from the web view's pages (its handlers in process) after the
// town has moved on, and a person squashes the remote's history. A
// deacon rings a crew member's live session (a stand-in runtime whose
// model is internal/stubmodel) and waits for receipts.
//
// Faults: commands are killed (kill -9) at random points, each host's
// sync --every too (restarted, as a service manager does); each
// host goes down once; power cuts kill a command at an fsync (strace) and
// drop the folder changes no fsync made durable; the remote refuses
// pushes now and then; the crew's model is down for some turns. Each
// agent retries as a careful agent does (keyed sends, a claim that hands
// back what it held). Every acknowledged operation goes into a ledger;
// after the hosts converge an oracle fails the test on any lost,
// duplicated or resurrected message, any work item merged twice or never,
// a web action that failed or was done twice, a "delivered" receipt for
// mail the stub model never received, any process left behind and any
// fsck finding, and off-home claims that waited more than one sync
// period and three syncs' time where no fault touched them, three
// periods and three syncs where one did (99th percentile), and prints
// the town's figures: among them off-home claim waits in sync periods,
// the home's queue while off-home agents wanted an item, and each host's
// share of the items claimed.
//
// The schedule of choices is a pure function of -soak.seed (timing is the
// machine's); -soak.duration sets how long the mayor posts. A failure
// prints the seed and the ledger lines about what broke. See
// docs/guarantees.md ("The town soak") for what it covers, what it cannot
// see, the command of a long run and the figures of one.
package townsim
