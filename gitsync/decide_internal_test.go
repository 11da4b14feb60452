package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

func add(p, blob string) change {
	return change{path: p, status: 'A', mode: "100644", omode: "000000", blob: blob, old: zeroID}
}

func del(p, old string) change {
	return change{path: p, status: 'D', mode: "000000", omode: "100644", blob: zeroID, old: old}
}

func byPath(cs ...change) map[string]change {
	m := map[string]change{}
	for _, c := range cs {
		m[c.path] = c
	}
	return m
}

// What a sync's changes do to this host's tombstones: a message of its
// homes removed for good, or moved out of its object, is buried; one
// moved within its object (archived, restored) is not; one that comes
// back to its object (a release, a local restore) is raised.
func TestBuried(t *testing.T) {
	mine := func(a maildir.Address) bool { return a.Name == "mayor" || a.Name == "work" }
	const (
		inbox   = "state/mail/mayor/m1.json"
		archive = "state/mail/mayor/archive/m1.json"
		queued  = "state/queue/work/q1.json"
		claimed = "state/mail/nux/q1.json"
		theirs  = "state/mail/nux/n1.json"
	)
	for _, tc := range []struct {
		name        string
		ours, apply []change
		bury, raise []string
	}{
		{"deleted", []change{del(inbox, "b")}, nil, []string{inbox}, nil},
		{"archived: moved within", []change{del(inbox, "b"), add(archive, "b")}, nil, nil, []string{archive}},
		{"claimed out of the queue", []change{del(queued, "b"), add(claimed, "c")}, nil, []string{queued}, nil},
		{"released back into the queue", nil, []change{add(queued, "b")}, nil, []string{queued}},
		{"another home's file deleted", []change{del(theirs, "b")}, nil, nil, nil},
		{"a send to another home", []change{add(theirs, "b")}, nil, nil, nil},
		{"deleted, a second copy still in the archive", []change{del("state/mail/mayor/m2.json", "b")}, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := func(p string) bool { return p == "state/mail/mayor/archive/m2.json" }
			bury, raise := buried(mine, tc.ours, tc.apply, held)
			if !slices.Equal(bury, tc.bury) || !slices.Equal(raise, tc.raise) {
				t.Fatalf("bury %v raise %v, want %v %v", bury, raise, tc.bury, tc.raise)
			}
		})
	}
}

// A first sync with no history in common: which of the copy's files are
// stale copies of other homes' messages.
func TestStaleCopies(t *testing.T) {
	mine := func(a maildir.Address) bool { return a.Name == "witness" }
	const (
		m1     = "state/mail/mayor/m1.json"
		m1arch = "state/mail/mayor/archive/m1.json"
		q1     = "state/queue/work/q1.json"
		q1nux  = "state/mail/nux/q1.json"
		own    = "state/mail/mayor/fresh.json"
		wit    = "state/mail/witness/w1.json"
		rec    = "state/homes/agent/witness.json"
	)
	for _, tc := range []struct {
		name        string
		ours, their []change
		graves      tombstones
		want        []string
	}{
		{"deleted by its home since", []change{add(m1, "b")}, nil, tombstones{graveOf(m1): "alpha"}, []string{m1}},
		{"archived by its home since", []change{add(m1, "b")}, []change{add(m1arch, "b")}, nil, []string{m1}},
		{"read since: another version", []change{add(m1, "b")}, []change{add(m1, "c")}, nil, []string{m1}},
		{"claimed elsewhere", []change{add(q1nux, "b")}, []change{add(q1, "b")}, nil, []string{q1nux}},
		{"the copy's own send", []change{add(own, "b")}, nil, nil, nil},
		{"the same file", []change{add(m1, "b")}, []change{add(m1, "b")}, nil, nil},
		{"its own home's file stands", []change{add(wit, "b"), add(rec, "r")}, []change{add(wit, "c"), add(rec, "r")}, nil, nil},
		{"a home it lost: the winner's", []change{add(wit, "b"), add(rec, "r")}, []change{add(wit, "c"), add(rec, "other")}, nil, []string{wit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := staleCopies(byPath(tc.ours...), byPath(tc.their...), tc.graves, mine)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("stale %v, want %v", got, tc.want)
			}
		})
	}
}

// One reader for git's -z outputs: a diff, a --stdin stream of diffs with
// their headers (one set per header, empty ones too), and ls-tree.
func TestParsers(t *testing.T) {
	one := ":100644 100644 aaa bbb M\x00state/a.json\x00:000000 100644 000 ccc A\x00state/b c.json\x00"
	sets, err := parseRaw(one, false)
	if err != nil || len(sets) != 1 || len(sets[0]) != 2 || sets[0][1].path != "state/b c.json" || sets[0][1].status != 'A' || sets[0][0].old != "aaa" {
		t.Fatalf("one diff: %v %v", sets, err)
	}
	stream := "t1 t2\n" + one + "t2 t3\n" + "t3 t4\n:100644 000000 ddd 000 D\x00state/d.json\x00"
	sets, err = parseRaw(stream, true)
	if err != nil || len(sets) != 3 || len(sets[0]) != 2 || len(sets[1]) != 0 || sets[2][0].status != 'D' {
		t.Fatalf("stream: %v %v", sets, err)
	}
	if _, err := parseRaw(":100644 bbb M\x00x\x00", false); err == nil {
		t.Fatal("a short line parsed")
	}
	es := parseLsTree("100644 blob aaa\tstate/a b.json\x00040000 tree ttt\tstate/d\x00")
	if len(es) != 2 || es[0].path != "state/a b.json" || es[0].blob != "aaa" || es[1].typ != "tree" {
		t.Fatalf("ls-tree: %+v", es)
	}
}

// The base of two commits with several merge bases (criss-crossed
// merges, which put-backs make) is a virtual one: the bases merged over
// their own base, as git's recursive merge builds it. Any one base alone
// is wrong for some path: here each base lacks a file the other added,
// which would look added (or deleted) on a side that never touched it.
func TestBaseOfCrissCrossIsVirtual(t *testing.T) {
	ctx := context.Background()
	g, tree := scratchRepo(t)
	commit := func(tr string, parents ...string) string {
		c, err := g.commitTree(ctx, tr, "c", parents...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	root := commit(tree("a"))
	b1 := commit(tree("a", "p"), root)
	b2 := commit(tree("a", "q"), root)
	x := commit(tree("a", "p", "q", "x"), b1, b2)
	y := commit(tree("a", "p", "q", "y"), b2, b1)
	got, c, err := g.base(ctx, x, y)
	if err != nil || c == "" {
		t.Fatalf("base: %v %q", err, c)
	}
	if want := tree("a", "p", "q"); got != want {
		files, _ := g.files(ctx, got)
		t.Fatalf("base tree holds %v, want a, p and q: the bases merged, not one of them", slices.Sorted(maps.Keys(files)))
	}
}

// lastHeld finds the newest commit of this host's line whose changes a
// rewritten tree holds, when that tree is no commit's tree (a person's
// squash that also dropped or added files): more of the paths a commit
// changed show it than show the tree before it. A message its home moved
// on since (archived) shows the commit; one nowhere shows neither.
func TestLastHeldWhenTheRewriteIsNoCommitsTree(t *testing.T) {
	ctx := context.Background()
	g, tree := scratchRepo(t)
	const (
		a  = "state/mail/mayor/a.json"
		b  = "state/mail/mayor/b.json"
		c  = "state/mail/mayor/c.json"
		bA = "state/mail/mayor/archive/b.json"
		x  = "state/mail/mayor/x.json"
	)
	c1, _ := g.commitTree(ctx, tree(a), "c1")
	c2, _ := g.commitTree(ctx, tree(a, b), "c2", c1)
	c3, _ := g.commitTree(ctx, tree(a, b, c), "c3", c2)
	for _, tc := range []struct {
		name    string
		rewrite []string
		want    string
	}{
		{"the tree of a commit", []string{a, b}, c2},
		{"c2's files and one more", []string{a, b, x}, c2},
		{"c2's, its message archived since", []string{a, bA, x}, c2},
		{"c1's files and one more", []string{a, x}, c1},
		{"all of them", []string{a, b, c, x}, c3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := g.lastHeld(ctx, c3, tree(tc.rewrite...))
			if err != nil || got != tc.want {
				t.Fatalf("lastHeld = %.8s %v, want %.8s (c1 %.8s, c2 %.8s, c3 %.8s)", got, err, tc.want, c1, c2, c3)
			}
		})
	}
}

// newestHeld's rule, path by path, without git: which commit of a line
// (newest first) a rewritten tree holds.
func TestNewestHeld(t *testing.T) {
	const (
		m     = "state/mail/mayor/m.json"
		mArch = "state/mail/mayor/archive/m.json"
		n     = "state/mail/mayor/n.json"
		q     = "state/queue/work/q.json"
		qBox  = "state/mail/nux/q.json"
	)
	mod := func(p, old, blob string) change {
		return change{path: p, status: 'M', mode: "100644", omode: "100644", blob: blob, old: old}
	}
	for _, tc := range []struct {
		name    string
		changed [][]change
		files   map[string]string
		want    int
	}{
		{"an add there", [][]change{{add(m, "b")}}, map[string]string{m: "b"}, 0},
		{"an add moved on since by its home", [][]change{{add(m, "b")}}, map[string]string{mArch: "b"}, 0},
		{"an add nowhere: no sign, the older one held", [][]change{{add(n, "c")}, {add(m, "b")}}, map[string]string{m: "b"}, 1},
		{"a change undone: the tree before it", [][]change{{mod(m, "b", "c")}}, map[string]string{m: "b"}, -1},
		{"a change made, or changed since", [][]change{{mod(m, "b", "c")}}, map[string]string{m: "d"}, 0},
		{"a claim (a move) not there", [][]change{{del(q, "b"), add(qBox, "c")}}, map[string]string{q: "b"}, -1},
		{"a claim there", [][]change{{del(q, "b"), add(qBox, "c")}}, map[string]string{qBox: "c"}, 0},
		{"none held", [][]change{{mod(m, "b", "c")}, {add(n, "x")}}, map[string]string{m: "b"}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newestHeld(tc.changed, tc.files); got != tc.want {
				t.Fatalf("newestHeld = %d, want %d", got, tc.want)
			}
		})
	}
}

// scratchRepo makes an empty repository for a test of git-backed
// decisions, and a maker of trees: each file (nested folders allowed)
// holding its own base name.
func scratchRepo(t *testing.T) (*git, func(files ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("skipping: the git command is not installed (apt install git)")
	}
	ctx := context.Background()
	g := &git{dir: t.TempDir(), bin: "git", env: environ("test", false)}
	if _, err := g.run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	return g, func(files ...string) string {
		env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
		var info strings.Builder
		for _, f := range files {
			out, err := g.runIn(ctx, strings.NewReader(path.Base(f)), nil, "hash-object", "-w", "--stdin")
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&info, "100644 %s\t%s\n", strings.TrimSpace(out), f)
		}
		if _, err := g.runIn(ctx, strings.NewReader(info.String()), env, "update-index", "--add", "--index-info"); err != nil {
			t.Fatal(err)
		}
		out, err := g.runIn(ctx, nil, env, "write-tree")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
}

// What a sync does with a remote rewritten under it, for each finding.
func TestJudgeRewrite(t *testing.T) {
	for _, c := range []struct {
		what  string
		seen  rewriteSeen
		adopt bool
		want  rewriteAnswer
	}{
		{"the remote moved on", rewriteSeen{ahead: true}, false, keepTheirs},
		{"wound back", rewriteSeen{back: true, fork: "f"}, false, woundBack},
		{"squashed", rewriteSeen{squashed: true}, true, squashed},
		{"compacted", rewriteSeen{compacted: true}, false, compacted},
		{"wound back and built on", rewriteSeen{fork: "f"}, true, forked},
		{"another history, adopted", rewriteSeen{}, true, adopted},
		{"another history", rewriteSeen{}, false, refused},
	} {
		if got := judgeRewrite(c.seen, c.adopt); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
	trees, rewrite := treesOf("t3 mailfs sync from beta\nt2 squash by a person\nt1 mailfs sync from alpha\n")
	if strings.Join(trees, " ") != "t3 t2 t1" || rewrite != "t2" {
		t.Errorf("trees %v, the person's %q", trees, rewrite)
	}
	if _, rewrite := treesOf("t2 mailfs sync from beta\nt1 mailfs sync from alpha\n"); rewrite != "t1" {
		t.Errorf("only syncs: the person's tree %q, want the oldest", rewrite)
	}
}

// Which compactions replaced a commit: the commits each names, one a line.
func TestCompactedFrom(t *testing.T) {
	bodies := "mailfs compact from alpha: 3 commits replaced by one\n\nc3\nc2\nc1\n\n"
	for _, c := range []struct {
		line []string
		want string
	}{
		{[]string{"c2", "c1"}, "c2"},      // known itself
		{[]string{"p", "c3", "c2"}, "c3"}, // a put-back never pushed, above c3
		{[]string{"c0"}, ""},              // older than the compaction names
		{nil, ""},
	} {
		if got := compactedFrom(bodies, c.line); got != c.want {
			t.Errorf("%v: %q, want %q", c.line, got, c.want)
		}
	}
	if got := compactedFrom("", []string{"c1"}); got != "" {
		t.Errorf("no compaction: %q", got)
	}
}

// TestHeldToRestore: which held messages a person's names put back.
func TestHeldToRestore(t *testing.T) {
	held := []string{"state/mail/mayor/20261128T010203.000000001Z-nux.json", "state/queue/work/20261128T010204.000000001Z-nux.json"}
	for _, tc := range []struct {
		which []string
		want  []string
		err   error
	}{
		{nil, held, nil},
		{[]string{"20261128T010204.000000001Z-nux"}, held[1:], nil},
		{[]string{held[0]}, held[:1], nil},
		{[]string{HeldDir + "/" + held[0]}, held[:1], nil},
		{[]string{strings.TrimSuffix(held[1], ".json"), "20261128T010204.000000001Z-nux.json"}, held[1:], nil},
		{[]string{"20261128T010203.000000001Z-nux", "20261128T010205.000000001Z-nux"}, nil, ErrNotHeld},
		{[]string{"state/mail/mayor"}, nil, ErrNotHeld},
	} {
		got, err := heldToRestore(held, tc.which)
		if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
			t.Errorf("heldToRestore(%v) = %v, %v; want %v, %v", tc.which, got, err, tc.want, tc.err)
		}
	}
}

// TestTombstonesCut: whose tombstones a history's newest change removed
// other than by that host's own sync.
func TestTombstonesCut(t *testing.T) {
	entry := func(subject string, changes ...string) string {
		return "\x01" + subject + "\x00\n" + strings.Join(changes, "\x00") + "\x00"
	}
	a1, a2, b1 := "state/gone/alpha/2026-11-28/01.txt", "state/gone/alpha/2026-11-28/02.txt", "state/gone/beta/2026-11-28/01.txt"
	for _, tc := range []struct {
		name string
		log  string
		want []string
	}{
		{"none", "", nil},
		{"the owner's adds", entry("mailfs sync from alpha: 2 files", "A", a1, "A", a2), nil},
		{"the owner forgets", entry("mailfs sync from alpha: 1 files", "D", a1) + entry("mailfs sync from alpha: 2 files", "A", a1, "A", a2), nil},
		{"a person removes", entry("tidy up", "D", a1, "D", b1) + entry("mailfs sync from beta: 1 files", "A", b1) + entry("mailfs sync from alpha: 2 files", "A", a1, "A", a2), []string{"alpha", "beta"}},
		{"put back since", entry("mailfs sync from alpha: 1 files", "A", a1) + entry("tidy up", "D", a1), nil},
		{"another host removes", entry("mailfs sync from beta: 1 files", "D", a1) + entry("mailfs sync from alpha: 1 files", "A", a1), []string{"alpha"}},
		{"a host named like a prefix", entry("mailfs sync from alphabet: 1 files", "D", a1), []string{"alpha"}},
	} {
		if got := tombstonesCut(tc.log); !slices.Equal(got, tc.want) {
			t.Errorf("%s: tombstonesCut = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// TestCutOf: which tombstones a history shows cut — removed by a commit
// other than their home's sync, and not back in the tree.
func TestCutOf(t *testing.T) {
	del := func(subject, file string, lines ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "\x01%s\n\ndiff --git a/%s b/%s\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/%s\n+++ /dev/null\n@@ -1,%d +0,0 @@\n", subject, file, file, file, len(lines))
		for _, l := range lines {
			b.WriteString("-" + l + "\n")
		}
		return b.String()
	}
	a1, b1 := "state/gone/alpha/2026-11-28/01.txt", "state/gone/beta/2026-11-28/01.txt"
	m1, m2, w1 := "state/mail/mayor/m1.json", "state/mail/mayor/m2.json", "state/mail/witness/w1.json"
	for _, tc := range []struct {
		name string
		log  string
		kept map[string]bool
		want tombstones
	}{
		{"none", "", nil, tombstones{}},
		{"a person's", del("tidy up", a1, m1, m2) + del("tidy up", b1, w1), nil,
			tombstones{graveOf(m1): "alpha", graveOf(m2): "alpha", graveOf(w1): "beta"}},
		{"the home forgets", del("mailfs sync from alpha: 1 files", a1, m1), nil, tombstones{}},
		{"another host's", del("mailfs sync from beta: 1 files", a1, m1), nil, tombstones{graveOf(m1): "alpha"}},
		{"the newest delete decides", del("mailfs sync from alpha: 1 files", a1, m2) + del("tidy up", a1, m1), nil, tombstones{}},
		{"back in the tree", del("tidy up", a1, m1), map[string]bool{a1: true}, tombstones{}},
		{"a host named like a prefix", del("mailfs sync from alphabet: 1 files", a1, m1), nil, tombstones{graveOf(m1): "alpha"}},
	} {
		if got := cutOf(tc.log, tc.kept); !maps.Equal(got, tc.want) {
			t.Errorf("%s: cutOf = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// TestReplacedLine and TestAckedAt: a compaction names each host's newest
// sync among the commits it replaced, and an outbox entry waiting on one
// of them is acked by a home whose newest sync is newer on the line.
func TestReplacedLine(t *testing.T) {
	commits, newest := replacedLine("c4 mailfs sync from beta: 0 files, 1 sends to its homes received\nc3 mailfs sync from alpha: 2 files\nc2 tidy up\nc1 mailfs sync from beta: 1 files\n")
	if !slices.Equal(commits, []string{"c4", "c3", "c2", "c1"}) {
		t.Errorf("commits %v", commits)
	}
	if want := "newest sync of alpha: c3\nnewest sync of beta: c4"; newest != want {
		t.Errorf("newest %q; want %q", newest, want)
	}
}

func TestAckedAt(t *testing.T) {
	body := func(c string, lines ...string) string {
		return "\x01" + c + "\nmailfs compact from gamma: 4 commits replaced by one\n\n" + strings.Join(lines, "\n") + "\n"
	}
	line := []string{"c4", "c3", "c2", "c1", ""}
	withNewest := body("k", append(line, "newest sync of alpha: c3", "newest sync of beta: c1")...)
	for _, tc := range []struct {
		name, log, commit, want string
		synced                  map[string]bool
	}{
		{"no compaction", "", "c2", "", nil},
		{"not among those replaced", withNewest, "c0", "", nil},
		{"a home newer on the line acks", withNewest, "c2", "k", map[string]bool{"alpha": true}},
		{"the commit itself is no ack", withNewest, "c3", "k", map[string]bool{}},
		{"an older compaction names none", body("k", line...), "c2", "k", map[string]bool{}},
		{"the newest that replaced it", body("k2", "x2", "x1") + withNewest, "c2", "k", map[string]bool{"alpha": true}},
	} {
		got, synced := ackedAt(tc.log, tc.commit)
		if got != tc.want || !maps.Equal(synced, tc.synced) {
			t.Errorf("%s: ackedAt = %q %v; want %q %v", tc.name, got, synced, tc.want, tc.synced)
		}
	}
}

// What a commit changes when nothing arrived: this host's changes from
// the base with its tombstone files on top, less what the tombstones put
// back as the base had it (the commit's message and Report.Committed list
// these, with no diff of the written tree).
func TestChangedWith(t *testing.T) {
	const b1, b2, b3 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	ours := map[string]change{
		"state/mail/a/m1.json":              {path: "state/mail/a/m1.json", status: 'A', mode: "100644", omode: "000000", blob: b1, old: zeroID},
		"state/gone/alpha/2026-11-28/x.txt": {path: "state/gone/alpha/2026-11-28/x.txt", status: 'A', mode: "100644", omode: "000000", blob: b1, old: zeroID},
		"state/gone/alpha/2026-11-27/y.txt": {path: "state/gone/alpha/2026-11-27/y.txt", status: 'M', mode: "100644", omode: "100644", blob: b2, old: b1},
		"state/gone/alpha/2026-11-26/z.txt": {path: "state/gone/alpha/2026-11-26/z.txt", status: 'M', mode: "100644", omode: "100644", blob: b2, old: b1},
	}
	tombs := []change{
		{path: "state/gone/alpha/2026-11-28/new.txt", status: 'M', mode: "100644", blob: b3},   // a new batch: a change
		{path: "state/gone/alpha/2026-11-28/x.txt", status: 'D', mode: "000000", blob: zeroID}, // added since the base, removed: none
		{path: "state/gone/alpha/2026-11-27/y.txt", status: 'M', mode: "100644", blob: b1},     // back as the base had it: none
		{path: "state/gone/alpha/2026-11-26/z.txt", status: 'D', mode: "000000", blob: zeroID}, // the base had it: removed
		{path: "state/gone/alpha/2026-11-25.txt", status: 'D', mode: "000000", blob: zeroID},   // untouched since the base: removed
	}
	got := changedWith(ours, tombs)
	want := []string{"state/gone/alpha/2026-11-25.txt", "state/gone/alpha/2026-11-26/z.txt", "state/gone/alpha/2026-11-28/new.txt", "state/mail/a/m1.json"}
	if !slices.Equal(got, want) {
		t.Errorf("changedWith:\n got %q\nwant %q", got, want)
	}
	if len(ours) != 4 {
		t.Errorf("changedWith modified ours: %v", ours)
	}
}
