package folderindex

import (
	"fmt"
	"strconv"
	"strings"
)

const cursorMagic = "mailfs-cursor/2"

// NoOrder is the order file of a cursor that only marks a queue that
// changes between claims.
const NoOrder = "-"

// A Cursor is a queue's place in its order file: the names of its oldest
// items, in claim order, kept so that a claim need not list the queue.
type Cursor struct {
	Order string // the order file's name in the index folder, or NoOrder
	Pos   int    // names of the order file behind the cursor
	Off   int64  // byte offset of the next name
	Uses  int    // claims the order file has served
	Stamp Stamp  // the queue folder as the last claimant left it
}

// CursorName is the cursor file of queue folder rel.
func CursorName(rel string) string { return FileName(rel) + ".cursor" }

// Encode is the cursor file of c.
func (c *Cursor) Encode() []byte {
	return fmt.Appendf(nil, "%s %s %x %x %x %x %x %x %x\n", cursorMagic, c.Order, c.Pos, c.Off, c.Uses,
		c.Stamp.Dev, c.Stamp.Ino, uint64(c.Stamp.Mtime), uint64(c.Stamp.Ctime))
}

// DecodeCursor reads a cursor file, or gives nil for one it cannot read.
func DecodeCursor(data []byte) *Cursor {
	f := strings.Fields(string(data))
	if len(f) != 9 || f[0] != cursorMagic || f[1] != NoOrder && !strings.Contains(f[1], ".order-") {
		return nil
	}
	var n [7]uint64
	for i := range n {
		v, err := strconv.ParseUint(f[i+2], 16, 64)
		if err != nil || i < 3 && v > 1<<40 {
			return nil
		}
		n[i] = v
	}
	return &Cursor{Order: f[1], Pos: int(n[0]), Off: int64(n[1]), Uses: int(n[2]),
		Stamp: Stamp{Dev: n[3], Ino: n[4], Mtime: int64(n[5]), Ctime: int64(n[6])}}
}
