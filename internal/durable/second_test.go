//go:build unix

package durable_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
)

// RemoveSecond removes a name only while another name of the same file
// exists at that moment, checked after the name is out of every other
// process's reach: the last name of a file is never removed, whatever
// happens between the look that judged it and the removal.
func TestRemoveSecondNeverRemovesTheLastName(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []durable.Option
	}{{"renameat2", nil}, {"fallback", []durable.Option{durable.WithFallback()}}} {
		t.Run(mode.name, func(t *testing.T) {
			cases := []struct {
				name string
				// meanwhile changes the world after the judging look,
				// before RemoveSecond runs; atAside, after it has set
				// the name aside.
				meanwhile, atAside func(dir string)
				wantErr            bool
				want               []string // names left, in a/ then b/
			}{
				{name: "two names", want: []string{"b/m.json"}},
				{
					name:      "moved away before (the scan's race)",
					meanwhile: func(dir string) { must(t, os.Remove(filepath.Join(dir, "b/m.json"))) },
					wantErr:   true, want: []string{"a/m.json"},
				},
				{
					name: "the kept name went after it was set aside",
					atAside: func(dir string) {
						must(t, os.Rename(filepath.Join(dir, "b/m.json"), filepath.Join(dir, "b/elsewhere.json")))
					},
					wantErr: true, want: []string{"a/m.json", "b/elsewhere.json"},
				},
				{
					name: "the kept name is another file now",
					atAside: func(dir string) {
						must(t, os.Remove(filepath.Join(dir, "b/m.json")))
						must(t, os.WriteFile(filepath.Join(dir, "b/m.json"), []byte("other"), 0o600))
					},
					wantErr: true, want: []string{"a/m.json", "b/m.json"},
				},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					var dir string
					opts := append(slices.Clone(mode.opts), durable.WithFault(func(s durable.Step, _ string) error {
						if s == durable.StepAside && tc.atAside != nil {
							tc.atAside(dir)
						}
						return nil
					}))
					r, d := openRoot(t, opts...)
					dir = d
					a, b := mkdir(t, r, "a"), mkdir(t, r, "b")
					must(t, a.Create("m.json", []byte("mail")))
					must(t, os.Link(filepath.Join(dir, "a/m.json"), filepath.Join(dir, "b/m.json")))
					judged, err := a.Lstat("m.json")
					must(t, err)
					if tc.meanwhile != nil {
						tc.meanwhile(dir)
					}
					err = a.RemoveSecond("m.json", b, "m.json", judged)
					if tc.wantErr != errors.Is(err, durable.ErrNotSecond) {
						t.Fatalf("err = %v, want ErrNotSecond: %v", err, tc.wantErr)
					}
					var left []string
					for _, sub := range []string{"a", "b"} {
						for _, n := range names(t, filepath.Join(dir, sub)) {
							left = append(left, sub+"/"+n)
						}
					}
					if !slices.Equal(left, tc.want) {
						t.Fatalf("left %v, want %v (nothing set aside may stay)", left, tc.want)
					}
					for _, n := range left {
						if data, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(data) == "" {
							t.Fatalf("%s: %q %v", n, data, err)
						}
					}
				})
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
