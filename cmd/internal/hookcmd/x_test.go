package hookcmd

import (
	"io"
	"testing"

	"github.com/mailfs/mailfs/cmd/internal/grammar"
)

func BenchmarkParseCheck(b *testing.B) {
	args := []string{"check", "quiet", "--inject"}
	for b.Loop() {
		var c cli
		call := grammar.For(&c, args)
		if _, err := parse(call, args, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
