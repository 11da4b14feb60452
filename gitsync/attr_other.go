//go:build !linux

package gitsync

import "syscall"

// gitAttr is how a sync starts git; only Linux has a parent-death signal.
func gitAttr() *syscall.SysProcAttr { return nil }
