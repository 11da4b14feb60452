// Package escalation routes problems to the people and agents who must act
// on them, and keeps after them until someone does, as Gas Town's
// escalations do.
//
// # On-disk format
//
//	<root>/state/escalation.json         routes: severity -> addresses; resend policy
//	<root>/state/escalations/<id>.json   one record per escalation
//
// The configuration, committed with the rest of state/, is
// {"routes": {"critical": ["mayor", "@oncall"], …}, "resend_after": "30m",
// "max_resends": 3}; a severity without a route goes to the mayor. An
// escalation is sent as ordinary mail (type "escalation", priority by
// severity, "Severity:" and "Escalation:" fields at the top of the body),
// and its record, named by the first copy's id, says who it went to, its
// status (open, acked, closed), who acknowledged or closed it and when, and
// how often it was re-sent. Messages are never rewritten: only the record
// changes, under a lock on the records' folder, written durably.
//
// # Guarantees
//
// [Bump] re-sends each open escalation that nobody acknowledged within
// resend_after, at most max_resends times, in its thread. It is idempotent
// for a given time and safe to run from several processes (the lock), so
// the archive loop and cron can both run it.
package escalation
