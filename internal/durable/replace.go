//go:build unix

package durable

import "github.com/google/renameio/v2"

func (d *Dir) replace(name string, data []byte) error {
	root := d.root.os
	if d.path != "" {
		sub, err := root.OpenRoot(d.path)
		if err != nil {
			return err
		}
		defer sub.Close()
		root = sub
	}
	// WithRoot keeps the temp in d (never in $TMPDIR) and confines it.
	pf, err := renameio.NewPendingFile(name, renameio.WithRoot(root), renameio.WithStaticPermissions(Perm))
	if err != nil {
		return err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(data); err != nil {
		return err
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return err
	}
	return d.Sync()
}
