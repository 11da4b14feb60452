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

// The evidence the hooks and plugins leave (hook.Confirm and
// hook.Answered, the one writer of it, which the slim per-turn binary
// calls without linking live) is one file per valid nonce, named for
// what it proves, in the record folder the deliverer reads (live.Dir),
// and nothing where no deliverer ever ran. live reads the suffixes from
// here (TestEvidenceIsPrunedWithItsRecord and the deliverer's tests).
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
	names := func(m map[string]string) (out []string) {
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		write  func(*maildir.Store, string, []string) error
		suffix string
	}{{hook.Confirm, hook.SubmittedSuffix}, {hook.Answered, hook.AnsweredSuffix}} {
		if left := leave(c.write, false); len(left) != 0 {
			t.Fatalf("no deliverer ever ran, yet %q were left", names(left))
		}
		ours := leave(c.write, true)
		folder := filepath.Join("runtime", "live", "toast")
		want := []string{filepath.Join(folder, "0123456789abcdef"+c.suffix), filepath.Join(folder, "fedcba9876543210"+c.suffix)}
		if !slices.Equal(names(ours), want) {
			t.Fatalf("left %q, want %q", names(ours), want)
		}
		for name, data := range ours {
			if !strings.HasSuffix(data, "\n") {
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
