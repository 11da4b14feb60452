package main

import (
	"fmt"

	"github.com/mailfs/mailfs/cmd/internal/citytown"
	"github.com/mailfs/mailfs/gascity"
)

// "mailfs gascity <op> [arg]", and the binary when it is called
// mailfs-gascity, serve Gas City's exec mail protocol: see package
// gascity.

// gascityCmd documents the mode in --help; calls with an op never reach
// kong (see run).
type gascityCmd struct {
	Op  string `arg:"" optional:"" help:"ensure-running, send, reply, inbox, check, all, get, read, mark-read, mark-unread, archive, delete, thread or count."`
	Arg string `arg:"" optional:"" help:"The recipient or the message id the op takes."`
}

func (c *gascityCmd) Help() string {
	return `Serves Gas City's exec mail protocol, so that a Gas City town can keep its
mail in mailfs: set GC_MAIL=exec:/path/to/mailfs-gascity (a link to the
mailfs binary; the name selects this mode), or point it at a two-line
script that runs "exec mailfs gascity "$@"". The root is $MAILFS_ROOT;
else the city's, found by today's gc chain, in its order: the --city (a
directory or a registered name) and --rig of the gc command it runs
under; $GC_CITY, $GC_CITY_PATH or $GC_CITY_ROOT naming a city directory
($GC_CITY also a registered name); $GC_RIG through the rig bindings (the [[rig]] tables of each
registered city's .gc/site.toml, for rigs its city.toml declares, then
those of the city found without the rig; the registry is
$GC_HOME/cities.toml, default ~/.gc/cities.toml); the rig binding at $GC_DIR when it holds a
stray .gc/; the city above $GC_DIR; the rig binding at the working
directory; the city above the working directory (a city.toml, else an
older .gc/, stopping at $HOME, the temp dir and $GC_CEILING_DIRECTORIES,
never ~/.gc itself). The root is the nearest .chipset in or above the
city, else <city>/.chipset; outside a city, the usual discovery from the
working directory.`
}

func (c *gascityCmd) Run(a *app) error {
	// Gas City's contract, not mailfs's table: 2 means "op not supported",
	// so every other failure of a provider call exits 1.
	fmt.Fprintln(a.err, `mailfs: error: gascity needs an op`)
	fmt.Fprintln(a.err, `mailfs: hint: run "mailfs gascity --help"`)
	return &exitStatus{code: 1}
}

// runGasCity serves one provider call.
func runGasCity(args []string, io stdio) int {
	return gascity.Run(args, io.in, io.out, io.err, citytown.Open)
}
