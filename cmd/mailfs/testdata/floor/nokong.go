//go:build !kong

package main

import "errors"

// parseWithKong is in kong.go, built with -tags kong: this floor links
// no kong.
func parseWithKong([]string) {
	must(errNoKong)
}

var errNoKong = errors.New("built without -tags kong")
