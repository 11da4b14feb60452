package folderindex

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestChecksumIsCRC32IEEE holds checksum to hash/crc32's, so that every
// index written before reads the same: the table, then inputs of every
// length around the switch to eight bytes a step, and unaligned ones.
func TestChecksumIsCRC32IEEE(t *testing.T) {
	if want := crc32.MakeTable(crc32.IEEE); crcTable != *want {
		t.Fatal("crcTable is not hash/crc32's IEEE table")
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, slicingMin+4096)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	lengths := []int{0, 1, 7, 8, 9, 100, 4095, slicingMin - 1, slicingMin, slicingMin + 1, slicingMin + 7, len(buf) - 3}
	for _, n := range lengths {
		for _, off := range []int{0, 1, 3} {
			p := buf[off : off+n]
			if got, want := checksum(p), crc32.ChecksumIEEE(p); got != want {
				t.Fatalf("checksum of %d bytes at offset %d: %08x, hash/crc32 says %08x", n, off, got, want)
			}
		}
	}
}

// BenchmarkChecksum measures checksum against hash/crc32 (which uses the
// CPU's carry-less multiply where it has one) on a small input, the
// index of a small folder, and a large one, a big folder's entries.
func BenchmarkChecksum(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 20} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(i * 7)
		}
		b.Run(byteSize(n)+"/mailfs", func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				checksum(p)
			}
		})
		b.Run(byteSize(n)+"/hash-crc32", func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.ChecksumIEEE(p)
			}
		})
	}
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	return "1KiB"
}
