// Package maildir stores agent mail as one JSON file per message, in a
// directory per agent, with no database and no server.
//
// A [Store] is a root directory (".chipset"). Any number of goroutines and
// processes may send, list, mark and delete in it at once, and shell scripts
// and git are clients of the same files.
//
// # On-disk format
//
//	<root>/state/mail/<agent>/<id>.json           active messages
//	<root>/state/mail/<agent>/archive/<id>.json   archived messages
//	<root>/state/queue/<name>/<id>.json           work-queue items ([Store.Claim])
//	<root>/state/channel/<name>/<id>.json         channel posts ([Store.Retain])
//	<root>/state/groups/<name>.json               groups ([Store.Expand])
//	<root>/state/audit/<stamp>-<actor>.json       what people did to others' work ([Store.Record], [Store.AuditLog])
//
// An [Address] names where mail goes: an agent, a group ("@name"), a work
// queue ("queue:name") or a channel ("channel:name"). Written addresses are
// resolved once, at the edge: [Store.Resolve] (a bare name means the one
// thing of that name that exists) or [ParseMailbox] (a bare name is the
// agent). Every method that reads or changes a folder takes the resulting
// Address value, checks it (so a hand-built one cannot lead outside the
// tree), and gives each message its folder as [Message.Box].
//
// An agent id is one path element ([ParseAgent]). A message id is its file
// name without ".json"; mailfs names files "<stamp>-<from>.json", with a
// fixed-width UTC stamp so names sort in time order ([NewID], [ParseStamp]).
// The content is one JSON object, keys sorted, two-space indent, a final
// newline, no HTML escaping ([Message.Encode]); [Message] lists the keys.
// Names starting with "." are temp files and never messages; only regular
// files named *.json are read.
//
// # Guarantees
//
// Delivery is atomic and durable: a reader sees a whole message or none,
// and [Store.Send] returns only once the file and its directory entry are on
// stable storage. A send never replaces a file. Marking read or unread
// rewrites the file atomically, keeps every other value byte for byte, and
// never brings back a message that was archived or deleted meanwhile.
// Readers skip what is not a message, report it to [Store.Warn], and leave
// it where it is. Directories are created 0700 and files 0600, whatever the
// umask. No address, id or symbolic link leads a read or a write outside
// the root.
//
// # Caveats
//
// The guarantees assume a local file system with POSIX rename semantics
// (Linux or macOS). A reader lists a directory and then opens its files, so
// a message delivered or moved during a listing may or may not be in it;
// the next listing sees it.
package maildir
