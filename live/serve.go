package live

import (
	"context"
	"errors"
	"strings"

	"github.com/mailfs/mailfs/hook"
)

// Off reports whether live delivery is turned off in an environment:
// MAILFS_LIVE set to off, 0, false or no (any case).
func Off(getenv func(string) string) bool {
	switch strings.ToLower(getenv("MAILFS_LIVE")) {
	case "off", "0", "false", "no":
		return true
	}
	return false
}

// Serve runs a deliverer for agent's session behind door, as every mailfs
// program runs one: the hooks told what each doorbell showed, so they do
// not show it again. Another deliverer already serving the session, or
// ctx's end, is a clean end (nil); so is the session's end.
func Serve(ctx context.Context, d *Deliverer) error {
	if d.Hooks == nil {
		d.Hooks = &hook.Handler{Collector: hook.Collector{Store: d.Store, Nudges: d.Nudges}}
	}
	err := d.Run(ctx)
	if errors.Is(err, ErrRunning) || ctx.Err() != nil {
		return nil
	}
	return err
}
