package live

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mailfs/mailfs/internal/chipset"
)

// The session lock removes its file when let go, and still admits one
// holder at a time: sixteen takers race for it 64,000 times in all, each
// holder checking that it is alone, and the folder is empty at the end.
func TestSessionLockIsExclusiveAndLeavesNothing(t *testing.T) {
	root, err := chipset.New(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dir, err := recordDir(root, "toast", true)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	var holders, taken atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4000 {
				unlock, err := lock(dir, "claude-1.json")
				if errors.Is(err, ErrRunning) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d holders of one session's lock", n)
				}
				taken.Add(1)
				holders.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if taken.Load() == 0 {
		t.Fatal("the lock was never taken")
	}
	left, err := os.ReadDir(filepath.Join(root.Path(), filepath.FromSlash(dir.Join("."))))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("the lock left %d files behind: %v", len(left), left[0].Name())
	}
	t.Logf("taken %d times", taken.Load())
}
