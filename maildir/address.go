package maildir

import (
	"fmt"
	"strings"
)

// MaxAgentLen is the longest agent id, in bytes.
const MaxAgentLen = 64

// ParseAgent returns the mailbox name for an agent address, or an error
// wrapping [ErrInvalidAddress] that says what is wrong with it.
//
// Ids are case-insensitive and stored lowercase. Addresses in the Gas Town
// form "rig/role" are accepted: each "/" becomes "." and one trailing "/" is
// dropped, so "Gastown/Witness", "gastown.witness" and "gastown/witness/"
// all name the mailbox "gastown.witness". The result is 1 to 64 bytes of
// a-z, 0-9, ".", "_" and "-", not starting with "." or "-": one path
// element that cannot lead outside the mail tree.
func ParseAgent(addr string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidAddress, addr, why)
	}
	if addr == "" {
		return bad("empty")
	}
	for i := 0; i < len(addr); i++ {
		if c := addr[i]; c < 0x20 || c == 0x7f {
			return bad("contains a control character")
		}
	}
	if strings.HasPrefix(addr, "/") {
		return bad("absolute paths are not agent names")
	}
	s := strings.TrimSuffix(addr, "/")
	parts := strings.Split(s, "/")
	for _, p := range parts {
		switch p {
		case "":
			return bad(`empty path element ("//")`)
		case ".", "..":
			return bad(`"." and ".." are not agent names`)
		}
	}
	b := []byte(strings.Join(parts, "."))
	if len(b) > MaxAgentLen {
		return bad(fmt.Sprintf("longer than %d bytes", MaxAgentLen))
	}
	if b[0] == '.' || b[0] == '-' {
		return bad(`must not start with "." or "-"`)
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A' // ASCII only: Unicode case folding could turn "K" (Kelvin) into "k"
			b[i] = c
		}
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		case c >= 0x80:
			return bad("only ASCII a-z 0-9 . _ - are allowed")
		default:
			return bad(fmt.Sprintf("%q is not allowed (use a-z 0-9 . _ -)", rune(c)))
		}
	}
	return string(b), nil
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
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidID, s, why)
	}
	switch {
	case id == "":
		return bad("empty")
	case id[0] == '.':
		return bad(`must not start with "."`)
	case strings.Contains(id, "/"):
		return bad(`must not contain "/"`)
	case len(id)+len(".json") > 255:
		return bad("too long")
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return bad("contains a control character")
		}
	}
	return id, nil
}
