package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A command pays for every package's initialisation before main, and a
// prompt hook pays it on every turn (docs/performance.md): mailfs's own
// packages build nothing at init — no tables, maps or regular
// expressions; those are switches, or built on first use. The runtime
// counts what each package's init allocates (GODEBUG=inittrace=1), so
// this is a count, not a timing: a package-level map literal, a
// regexp.MustCompile or an fmt.Errorf at package level fails it. The
// same holds for mailfs-hook, which a runtime starts every turn.
func TestStartUpBuildsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mailfs")
	}
	for _, bin := range []struct {
		name, pkg string
		args      []string
		inits     []string // packages whose init line must show: the trace is read
	}{
		{"mailfs", ".", []string{"version"}, []string{"main", "github.com/mailfs/mailfs/hook", "github.com/mailfs/mailfs/setup"}},
		{"mailfs-hook", "../mailfs-hook", []string{"--version"}, []string{"github.com/mailfs/mailfs/hook"}},
	} {
		path := filepath.Join(t.TempDir(), bin.name)
		build := exec.Command("go", "build", "-o", path, bin.pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", bin.name, err, out)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(path, bin.args...)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s", bin.name, bin.args, err, stderr.String())
		}
		// init github.com/mailfs/mailfs/hook @0.95 ms, 0.004 ms clock, 72 bytes, 2 allocs
		line := regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
		const most = 256 // bytes: a few errors.New, no table
		seen := map[string]bool{}
		for l := range strings.Lines(stderr.String()) {
			m := line.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			pkg := m[1]
			if pkg != "main" && !strings.HasPrefix(pkg, "github.com/mailfs/mailfs/") {
				continue
			}
			seen[pkg] = true
			if n, _ := strconv.Atoi(m[2]); n > most {
				t.Errorf("%s: package %s allocates %s bytes (%s allocations) at init; build it on first use instead", bin.name, pkg, m[2], m[3])
			}
		}
		for _, pkg := range bin.inits {
			if !seen[pkg] {
				t.Errorf("%s: no init line for %s in:\n%s", bin.name, pkg, stderr.String())
			}
		}
	}
}

// TestLinksNothingHeavy holds mailfs to linking none of the packages whose
// initialisation or size every command would pay for a few commands'
// sake: the web view's and the MCP server's (net/http, html/template, the
// MCP SDK) live in mailfs-serve and mailfs-mcp, which mailfs runs in its
// place (helper.go), as the Codex launcher's WebSocket library does in
// mailfs-codex. It holds mailfs-hook, which runtimes start every turn,
// to less: none of mailfs's packages that only other commands use either
// (the installer, sync, fsck, the archive sweep, escalations, live
// delivery, the Gas City provider). A package
// that imports one of them fails this, naming its importer.
func TestLinksNothingHeavy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	heavy := []string{"net/http", "html/template", "github.com/modelcontextprotocol/go-sdk/mcp", "github.com/chromedp/chromedp"}
	const mod = "github.com/mailfs/mailfs/"
	for _, bin := range []struct {
		name, pkg string
		heavy     []string
	}{
		// hash/crc32 builds its tables at init and at its first checksum,
		// about 0.08 ms of every call (the index's checksums are Adler-32).
		{"mailfs", ".", append(slices.Clip(heavy), "hash/crc32")},
		// The hook needs the store, the nudge queues and the hook's rules:
		// not live delivery (its evidence is written by hook.Confirm), not
		// the Gas City provider (package citytown), nor what they link
		// (the network, the city's TOML).
		{"mailfs-hook", "../mailfs-hook", append(slices.Clip(heavy), mod+"setup", mod+"gitsync", mod+"fsck", mod+"archive", mod+"escalation", mod+"mcpserver", mod+"webview",
			mod+"live", mod+"gascity", mod+"watch", mod+"townsim", "net", "github.com/pelletier/go-toml/v2", "github.com/muesli/mango", "hash/crc32")},
		// mailfs-codex links net/http for its WebSocket library
		// (github.com/coder/websocket), and nothing else heavy.
		{"mailfs-codex", "../mailfs-codex", append(slices.DeleteFunc(slices.Clone(heavy), func(p string) bool { return p == "net/http" }), mod+"mcpserver", mod+"webview", mod+"setup")},
	} {
		importers := map[string][]string{} // package -> the packages that import it
		for pkg, imports := range goListImports(t, "-deps", bin.pkg) {
			for _, imp := range imports {
				importers[imp] = append(importers[imp], pkg)
			}
		}
		for _, pkg := range bin.heavy {
			if by, ok := importers[pkg]; ok {
				slices.Sort(by)
				t.Errorf("%s links %s (imported by %s): its cost lands on every call", bin.name, pkg, strings.Join(by, ", "))
			}
		}
		if len(importers[mod+"maildir"]) == 0 {
			t.Fatalf("go list named no importer of maildir in %s: not the dependency list expected", bin.name)
		}
	}
}
