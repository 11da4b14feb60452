//go:build unix && !linux && !darwin

package durable

import "golang.org/x/sys/unix"

// This system has neither a no-replace rename nor an exchange: the
// fallbacks of fallback.go always apply.

func renameNoReplace(src *Dir, old string, dst *Dir, new string) error { return unix.ENOTSUP }

func renameExchange(d *Dir, a, b string) error { return unix.ENOTSUP }

func isUnsupported(err error) bool { return err == unix.ENOTSUP }
