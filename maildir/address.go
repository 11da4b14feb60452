package maildir

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxAgentLen is the longest agent id, in bytes.
const MaxAgentLen = 64

// ParseAgent returns the mailbox name for an agent address, or an error
// wrapping [ErrInvalidAddress] that says what is wrong with it.
//
// Ids are case-insensitive and stored lowercase. Addresses in the Gas Town
// form "rig/role" are accepted: each "/" becomes "." and one trailing "/" is
// dropped, so "Gastown/Witness", "gastown.witness" and "gastown/witness/"
// all name the mailbox "gastown.witness". Spellings Gas Town treats as one
// agent are folded into one mailbox, as its normalizeAddress does:
// "gastown/polecats/nux" and "gastown/crew/nux" are "gastown.nux", and
// "gastown/mayor" is the town-level "mayor". The result is 1 to 64 bytes of
// a-z, 0-9, ".", "_" and "-", not starting with "." or "-": one path
// element that cannot lead outside the mail tree.
func ParseAgent(addr string) (string, error) {
	name, why := canonical(addr)
	if why != "" {
		return "", fmt.Errorf("%w %s: %s", ErrInvalidAddress, quoteCut(addr), why)
	}
	return name, nil
}

// canonical returns the canonical form of an agent (or group, queue or
// channel) name, or why it is not one.
func canonical(addr string) (name, why string) {
	if addr == "" {
		return "", "empty"
	}
	for i := 0; i < len(addr); i++ {
		if c := addr[i]; c < 0x20 || c == 0x7f {
			return "", "contains a control character"
		}
	}
	if strings.HasPrefix(addr, "/") {
		return "", "absolute paths are not agent names"
	}
	s := strings.TrimSuffix(addr, "/")
	raw := strings.Split(s, "/")
	// Every element as written, before folding drops any: "../mayor" or
	// "$(id)/mayor" must not fold into "mayor".
	for _, p := range raw {
		switch p {
		case "":
			return "", `empty path element ("//")`
		case ".", "..":
			return "", `"." and ".." are not agent names`
		}
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
			case c >= 0x80:
				return "", "only ASCII a-z 0-9 . _ - are allowed"
			default:
				return "", fmt.Sprintf("%q is not allowed (use a-z 0-9 . _ -)", rune(c))
			}
		}
	}
	parts := fold(raw)
	b := []byte(strings.Join(parts, "."))
	if len(b) > MaxAgentLen {
		return "", fmt.Sprintf("longer than %d bytes", MaxAgentLen)
	}
	if b[0] == '.' || b[0] == '-' {
		return "", `must not start with "." or "-"`
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A' // ASCII only: Unicode case folding could turn "K" (Kelvin) into "k"
			b[i] = c
		}
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		case c >= 0x80:
			return "", "only ASCII a-z 0-9 . _ - are allowed"
		default:
			return "", fmt.Sprintf("%q is not allowed (use a-z 0-9 . _ -)", rune(c))
		}
	}
	return string(b), ""
}

// fold applies Gas Town's folding of agent addresses (its
// normalizeAddress) to the "/"-separated elements of one: spellings Gas
// Town treats as one agent are one mailbox.
//
//	rig/polecats/name, rig/polecat/name, rig/crew/name  ->  rig/name
//	rig/mayor, rig/deacon                               ->  mayor, deacon (town-level roles)
//
// (rig/polecat/name, the legacy singular, as Gas Town's
// internal/mail/types.go normalizeAddress folds it: gagecane/gastown at
// 57bcb59d.)
func fold(parts []string) []string {
	switch {
	case len(parts) == 3 && (strings.EqualFold(parts[1], "polecats") || strings.EqualFold(parts[1], "polecat") || strings.EqualFold(parts[1], "crew")):
		return []string{parts[0], parts[2]}
	case len(parts) == 2 && (strings.EqualFold(parts[1], "mayor") || strings.EqualFold(parts[1], "deacon")):
		return parts[1:]
	}
	return parts
}

// Written returns addr as a message records it in "from", "to" and "cc":
// as the caller wrote it, case and "/" kept, but folded as Gas Town folds
// agent addresses (see [ParseAgent]) and without a trailing "/". A
// prefixed address other than "agent:" is returned as it is. It does not
// validate: use it on an address that parsed.
func Written(addr string) string {
	name, ok := strings.CutPrefix(addr, "agent:")
	if strings.HasPrefix(addr, "@") || strings.HasPrefix(addr, "queue:") || strings.HasPrefix(addr, "channel:") {
		return addr
	}
	_ = ok
	return strings.Join(fold(strings.Split(strings.TrimSuffix(name, "/"), "/")), "/")
}

// ValidAgent reports whether name is already a canonical agent id, as
// [ParseAgent] returns it. Directory names that are not are never mailboxes.
func ValidAgent(name string) bool {
	got, err := ParseAgent(name)
	return err == nil && got == name
}

// ParseID returns the message id named by s, which may be the id itself or
// its file name (with ".json"). It refuses ids that could not be a file in
// a mailbox: empty, starting with ".", containing "/", NUL or another
// control character, or too long for a file name.
func ParseID(s string) (string, error) {
	id := strings.TrimSuffix(s, ".json")
	if why := idProblem(id); why != "" {
		return "", fmt.Errorf("%w %s: %s", ErrInvalidID, quoteCut(s), why)
	}
	return id, nil
}

// idProblem says why id cannot be a message id, or "".
func idProblem(id string) string {
	switch {
	case id == "":
		return "empty"
	case id[0] == '.':
		return `must not start with "."`
	case strings.Contains(id, "/"):
		return `must not contain "/"`
	case len(id)+len(".json") > 255:
		return "too long"
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return "contains a control character"
		}
	}
	if !utf8.ValidString(id) {
		return "not valid UTF-8"
	}
	return ""
}

// A Kind is what an address names.
type Kind uint8

// The kinds of address (SPEC §8). Agents, queues and channels are folders
// of messages; a group is a list of addresses, expanded when mail is sent.
const (
	KindAgent   Kind = iota // toast, gastown/witness, agent:toast
	KindGroup               // @reviewers
	KindQueue               // queue:work
	KindChannel             // channel:merges
)

// The folders of the kinds that hold messages.
const (
	QueueDir   = "state/queue"
	ChannelDir = "state/channel"
	GroupDir   = "state/groups"
)

// An Address is a parsed recipient: an agent, a group, a work queue or a
// channel. Its Name is canonical, as [ParseAgent] makes agent ids.
type Address struct {
	Kind Kind
	Name string
}

// String returns the address in its canonical written form: "toast",
// "@reviewers", "queue:work", "channel:merges".
func (a Address) String() string {
	switch a.Kind {
	case KindGroup:
		return "@" + a.Name
	case KindQueue:
		return "queue:" + a.Name
	case KindChannel:
		return "channel:" + a.Name
	}
	return a.Name
}

// MarshalText writes the address as String does, so that JSON shows it as
// it is written on the command line.
func (a Address) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses an address as [ParseMailbox] does.
func (a *Address) UnmarshalText(b []byte) error {
	p, err := ParseMailbox(string(b))
	if err == nil {
		*a = p
	}
	return err
}

// Qualified returns the address written so that it cannot be mistaken for
// another kind: an agent gets the "agent:" prefix. Programs that pass
// addresses back to a Store (sweepers, watchers) use this form.
func (a Address) Qualified() string {
	if a.Kind == KindAgent {
		return "agent:" + a.Name
	}
	return a.String()
}

// Dir returns the root-relative folder that holds the address's messages,
// or its archive folder. A group holds none: Dir returns "".
func (a Address) Dir(archived bool) string {
	var d string
	switch a.Kind {
	case KindAgent:
		d = MailDir + "/" + a.Name
	case KindQueue:
		d = QueueDir + "/" + a.Name
	case KindChannel:
		d = ChannelDir + "/" + a.Name
	default:
		return ""
	}
	if archived {
		d += "/" + ArchiveDir
	}
	return d
}

// ParseAddress parses a written address. Prefixes say what it names:
// "@name" a group, "queue:name" a work queue, "channel:name" a channel,
// "agent:name" an agent; without one it is an agent address (SPEC §2).
// Names follow the rules of agent ids. ParseAddress checks only the
// syntax; [Store.Resolve] also refuses a bare name that could mean two
// things.
func ParseAddress(s string) (Address, error) {
	a, _, err := parseAddress(s)
	return a, err
}

// parseAddress is ParseAddress that also says whether the address was
// written with a prefix (and so cannot be ambiguous).
func parseAddress(s string) (a Address, explicit bool, err error) {
	kind, name, explicit := KindAgent, s, false
	for _, p := range []struct {
		prefix string
		kind   Kind
	}{{"@", KindGroup}, {"queue:", KindQueue}, {"channel:", KindChannel}, {"agent:", KindAgent}} {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			kind, name, explicit = p.kind, rest, true
			break
		}
	}
	canon, why := canonical(name)
	if why != "" {
		if kind != KindAgent {
			return Address{}, false, &NameError{Kind: kind, Name: s, Why: why}
		}
		return Address{}, false, fmt.Errorf("%w %s: %s", ErrInvalidAddress, quoteCut(s), why)
	}
	return Address{Kind: kind, Name: canon}, explicit, nil
}

// ParseMailbox parses an address given to a command that acts on one
// folder of messages, such as "my inbox": a bare name is always the agent
// of that name, never a group, queue or channel that shares it, so an
// agent's own commands cannot be captured by a group named after it.
// Prefixed addresses parse as [ParseAddress] parses them.
func ParseMailbox(s string) (Address, error) { return ParseAddress(s) }

// String names the kind, as error messages say it.
func (k Kind) String() string {
	switch k {
	case KindGroup:
		return "group"
	case KindQueue:
		return "queue"
	case KindChannel:
		return "channel"
	}
	return "agent"
}

// parseName returns the canonical name of a group, queue or channel,
// written with or without its prefix, or an error wrapping
// [ErrInvalidName].
func parseName(kind Kind, s string) (string, error) {
	a, explicit, err := parseAddress(s)
	if err != nil && kind != KindAgent && !errors.Is(err, ErrInvalidName) {
		// A bare name that is not a valid agent id: say it as a name of kind.
		_, why := canonical(s)
		return "", &NameError{Kind: kind, Name: s, Why: why}
	}
	if err != nil {
		return "", err
	}
	if explicit && a.Kind != kind {
		return "", fmt.Errorf("%w: %s is %s, not a %s", ErrWrongKind, quoteCut(s), article(a.Kind), kind)
	}
	return a.Name, nil
}

func article(k Kind) string {
	if k == KindAgent {
		return "an agent"
	}
	return "a " + k.String()
}

// A NameError is a group, queue or channel name that does not follow the
// rules of agent ids. It matches [ErrInvalidName].
type NameError struct {
	Kind Kind   // what it would have named
	Name string // as given
	Why  string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("maildir: invalid %s name %s: %s", e.Kind, quoteCut(e.Name), e.Why)
}

// Is makes errors.Is(err, ErrInvalidName) true.
func (e *NameError) Is(target error) bool { return target == ErrInvalidName }

// NewMailboxes says which of sent's copies went to an agent mailbox that was
// not among before (the Agents a send saw first), once each, naming close
// matches: a send creates a mailbox, so a mistyped name would otherwise
// strand the message where nobody reads it.
func NewMailboxes(before []string, sent []*Message) []string {
	var warnings []string
	for _, m := range sent {
		if m.Box.Kind != KindAgent || slices.Contains(before, m.Box.Name) {
			continue
		}
		before = append(before, m.Box.Name) // once each
		hint := ""
		if similar := Similar(m.Box.Name, before); len(similar) > 0 {
			hint = "; did you mean " + strings.Join(similar, " or ") + "?"
		}
		warnings = append(warnings, fmt.Sprintf("created the mailbox %s: no agent had it before%s", m.Box.Name, hint))
	}
	return warnings
}

// Similar returns the names in among that name could be a slip for: at
// most two edits away, or the same last element ("toast" and
// "gastown.toast"), at most three, closest first. A send to a mailbox that
// did not exist names them, so that a typo does not go unseen.
func Similar(name string, among []string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	last := name[strings.LastIndexByte(name, '.')+1:]
	for _, a := range among {
		if a == name {
			continue
		}
		d := editDistance(name, a, 3)
		if d > 2 && a[strings.LastIndexByte(a, '.')+1:] != last {
			continue
		}
		cs = append(cs, cand{a, d})
	}
	slices.SortStableFunc(cs, func(x, y cand) int { return x.d - y.d })
	var out []string
	for i, c := range cs {
		if i == 3 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, or limit once it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// quoteCut quotes a name for an error message, cut to its first 80 bytes
// (a name past 64 is wrong anyway) with the length of the rest, so that a
// 10 KB mistake is not echoed whole.
func quoteCut(s string) string {
	const keep = 80
	if len(s) <= keep {
		return fmt.Sprintf("%q", s)
	}
	cut := strings.ToValidUTF8(s[:keep], "")
	return fmt.Sprintf("%q… (%d bytes more)", cut, len(s)-len(cut))
}
