package live

import (
	"bytes"
	"io"
	"os"
)

// growing is a runtime's file of JSON lines (a transcript, a chat or
// session record) read as it grows: each look hands over the whole lines
// appended since the last one. A line longer than the look's bound is
// skipped whole, even across looks; a file that shrank was rewritten and
// is read again from its start.
type growing struct {
	path    string
	off     int64
	partial []byte
	skip    bool // inside a line too long to keep: drop up to its end
}

// next reads at most maxRead bytes appended since the last look and calls
// line with each whole line of at most maxLine bytes. It reports whether
// the file was read again from its start.
func (g *growing) next(maxRead int64, maxLine int, line func([]byte)) (restarted bool, err error) {
	f, err := os.Open(g.path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < g.off {
		g.off, g.partial, g.skip, restarted = 0, nil, false, true
	}
	if _, err := f.Seek(g.off, io.SeekStart); err != nil {
		return restarted, err
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return restarted, err
	}
	g.off += int64(len(buf))
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			if !g.skip {
				g.partial = append(g.partial, buf...)
				if len(g.partial) > maxLine {
					g.partial, g.skip = nil, true
				}
			}
			break
		}
		l := buf[:i]
		buf = buf[i+1:]
		if g.skip {
			g.skip = false
			continue
		}
		if len(g.partial) > 0 {
			l = append(g.partial, l...)
			g.partial = nil
		}
		if len(l) <= maxLine {
			line(l)
		}
	}
	return restarted, nil
}
