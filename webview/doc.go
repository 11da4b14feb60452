// Package webview is the overseer's view of a town: a small web server,
// started by a person when they want to look (mailfs serve), never needed
// by agents. It shows every mailbox with its unread mail by priority,
// queues, channels and held nudges, updated live as mail lands; a
// mailbox, a message, a thread, a search and the archive, with stuck
// work (claims held past their time) and who is waited on first; and,
// when started as an identity, lets that identity send, reply, mark read
// and archive its own mail, and release, reassign or nudge anyone's
// claimed work, each asked first and recorded in the town's audit log
// ([maildir.AuditDir]), done or refused. An action carries what its
// question page showed (the claimant, the claim's time, not done) and is
// refused when that changed ([maildir.Store.ReleaseSeen]), saying who
// changed it.
//
// It reads and writes through [maildir.Store] and [nudgeq.Queue] only —
// the same listing, parsing, search, claim and address rules as the
// command line — and reads each agent's session from the deliverers'
// records ([live.Records]) and the hooks' state ([hook.Handler.Seen]);
// it never stats, opens or lists a file or folder itself.
// It learns of new mail from [watch.Watcher], and of other changes
// (marks, archives, claims, drained nudges) from the town's print
// ([maildir.Store.Print]), looked at once a second; both are pushed to
// the page as server-sent events, one feed per browser: its tabs elect
// the one that keeps it (static/live.js). What it read of a folder it keeps under
// the folder's stamp ([maildir.Store.Stamp]) by the store's one rule, that
// of its folder index; a search, every message of each folder (up to a
// budget), so that it reads again only the files that changed
// ([maildir.Store.Reread]). The page asks for nothing on a timer.
//
// # Security
//
// By default it binds to loopback, answers only requests whose Host is a
// loopback name (so a rebinding DNS name cannot reach it), and is read
// only. A token ([Server.Token]) makes every request need it: the one
// way to serve on another address. Every state-changing request needs
// the token (a hidden form field, or the X-Mailfs-Token header) and must
// come from the page's own origin (the Origin header, else
// Sec-Fetch-Site). Message text is only ever put into HTML by
// html/template, which escapes it, and a Content-Security-Policy allows
// only the server's own script and style. Every name and id in a URL goes
// through the store's validation: no URL leads outside the root.
package webview
