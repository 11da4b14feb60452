package live_test

import (
	"os"
	"testing"
)

// TestMain removes the binaries the real-runtime tests built, once every
// test has run: a folder of them a run would otherwise leave in $TMPDIR.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
