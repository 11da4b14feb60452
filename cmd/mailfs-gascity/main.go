// Command mailfs-gascity serves Gas City's exec mail protocol from a mailfs
// root: GC_MAIL=exec:/path/to/mailfs-gascity. It is "mailfs gascity" in a
// binary that links nothing else, because Gas City starts one process per
// mail operation and a smaller binary starts faster.
package main

import (
	"fmt"
	"os"

	"github.com/mailfs/mailfs/cmd/internal/citytown"
	"github.com/mailfs/mailfs/gascity"
	"github.com/mailfs/mailfs/internal/buildinfo"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" { // a person asks, as of every mailfs binary
		fmt.Println(buildinfo.Version())
		os.Exit(0)
	}
	os.Exit(gascity.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, citytown.Open))
}
