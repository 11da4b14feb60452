//go:build !linux

package durable

// Only Linux has a witness here (dnotify, see witness_linux.go); elsewhere
// CreateWitnessed reports nothing seen alone, and callers do without.
type witness struct{}

func (d *Dir) armWitness() *witness { return nil }

func (w *witness) alone(expect int) bool { return false }

// ProbeWitness returns ErrNoWitness: no witness on this system.
func (d *Dir) ProbeWitness() (int, error) { return 0, ErrNoWitness }
