package live

import (
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// DNDHolds reports whether live delivery holds m back while do not
// disturb is on: every message but urgent mail (high included, which the
// hooks still show). The deliverer decides by it (pressing), and "mailfs
// dnd status" counts by it, so the two always agree.
func DNDHolds(m *maildir.Message) bool { return m.Priority != maildir.Urgent }

// DNDHoldsNudge reports whether live delivery holds n back while do not
// disturb is on: every nudge but an urgent one.
func DNDHoldsNudge(n *nudgeq.Nudge) bool { return n.Priority != nudgeq.Urgent }

// DNDHeld counts, of an agent's unread mail and queued nudges, what live
// delivery holds back while do not disturb is on.
func DNDHeld(mail []*maildir.Message, nudges []*nudgeq.Nudge) (heldMail, heldNudges int) {
	for _, m := range mail {
		if DNDHolds(m) {
			heldMail++
		}
	}
	for _, n := range nudges {
		if DNDHoldsNudge(n) {
			heldNudges++
		}
	}
	return heldMail, heldNudges
}
