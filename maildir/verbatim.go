package maildir

import (
	"fmt"
	"strings"
)

// VerbatimMailbox is the mailbox of an agent address kept exactly as
// written, Gas City's rule: "myrig/witness", "myrig.witness" and
// "MyRig/Witness" are three agents, and "frontend/mayor" is not the city's
// mayor. The mapping is one to one: "/" becomes ".", and what would
// otherwise meet is escaped with "_": "." as "_.", "_" as "__", an
// upper-case letter as "_" and the letter in lower case. An address of
// only lower-case letters, digits, "-" and "/" keeps the name Gas Town's
// folding would give it. The address may use ASCII letters, digits, "-",
// "_", "." and "/", in elements that are not empty, "." or "..".
func VerbatimMailbox(addr string) (string, error) {
	bad := func(why string) (string, error) { return "", fmt.Errorf("%w %q: %s", ErrInvalidAddress, addr, why) }
	if addr == "" {
		return bad("empty")
	}
	var b strings.Builder
	for i, part := range strings.Split(addr, "/") {
		switch part {
		case "":
			return bad(`empty path element ("//")`)
		case ".", "..":
			return bad(`"." and ".." are not agent names`)
		}
		if i > 0 {
			b.WriteByte('.')
		}
		for j := 0; j < len(part); j++ {
			switch c := part[j]; {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
				b.WriteByte(c)
			case 'A' <= c && c <= 'Z':
				b.WriteByte('_')
				b.WriteByte(c + 'a' - 'A')
			case c == '.':
				b.WriteString("_.")
			case c == '_':
				b.WriteString("__")
			case c >= 0x80:
				return bad("only ASCII letters, digits, - _ . and / are allowed")
			default:
				return bad(fmt.Sprintf("%q is not allowed", rune(c)))
			}
		}
	}
	name := b.String()
	if !ValidAgent(name) {
		return bad(fmt.Sprintf("its mailbox name %q is not one (too long, or starting with - or .)", name))
	}
	return name, nil
}

// agentOf is the mailbox of an agent address: Gas Town's folding, or the
// address as written when the store is Verbatim.
func (s *Store) agentOf(addr string) (string, error) {
	if s.Verbatim {
		return VerbatimMailbox(strings.TrimPrefix(addr, "agent:"))
	}
	return ParseAgent(addr)
}

// written is how a message records the agent address addr: folded as Gas
// Town folds it, or exactly as given when the store is Verbatim.
func (s *Store) written(addr string) string {
	if s.Verbatim {
		return strings.TrimPrefix(addr, "agent:")
	}
	return Written(addr)
}
