package hook_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// The evidence the slim per-turn binary leaves (hook.Confirm, which does
// not link live) is the evidence live's own Confirm leaves, file for
// file, where the deliverer reads it: the two must not drift apart.
func TestConfirmLeavesWhatLiveReads(t *testing.T) {
	nonces := []string{"0123456789abcdef", "fedcba9876543210", "../../escape0000", "short", "0123456789ABCDEF"}
	leave := func(confirm func(*maildir.Store, string, []string) error, record bool) map[string]string {
		t.Helper()
		root := filepath.Join(t.TempDir(), ".chipset")
		s, err := maildir.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		folder := filepath.Join(root, filepath.FromSlash(live.Dir), "toast")
		if record { // a deliverer of toast has run
			if err := os.MkdirAll(folder, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := confirm(s, "toast", nonces); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		filepath.WalkDir(filepath.Join(root, "runtime"), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, _ := os.ReadFile(path)
				rel, _ := filepath.Rel(root, path)
				files[rel] = string(data)
			}
			return nil
		})
		return files
	}
	for _, record := range []bool{true, false} {
		ours, lives := leave(hook.Confirm, record), leave(live.Confirm, record)
		names := func(m map[string]string) (out []string) {
			for k := range m {
				out = append(out, k)
			}
			slices.Sort(out)
			return out
		}
		if !slices.Equal(names(ours), names(lives)) {
			t.Fatalf("record folder %v: hook.Confirm left %q, live.Confirm %q", record, names(ours), names(lives))
		}
		if want := 2; record && len(ours) != want {
			t.Fatalf("left %q, want the %d valid nonces' files", names(ours), want)
		}
		for name, data := range ours {
			if !strings.HasSuffix(name, hook.SeenSuffix) || !strings.HasSuffix(data, "\n") {
				t.Errorf("%s: %q", name, data)
			}
			if _, err := time.Parse(time.RFC3339Nano, strings.TrimSuffix(data, "\n")); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if hook.LiveDir != live.Dir {
		t.Fatalf("hook.LiveDir %q, live.Dir %q", hook.LiveDir, live.Dir)
	}
}
