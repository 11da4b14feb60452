package setup

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// mcpServer is where Codex's config.toml registers an MCP server.
var mcpServer = []string{"mcp_servers", "mailfs"}

// editCodexMCP registers mailfs's MCP server in a Codex config.toml,
// editing it in place: the server's command and args are set where they are
// written, whichever way (a [mcp_servers.mailfs] table, with or without a
// comment on its header; dotted keys; an inline table), and everything
// else is kept byte for byte: comments, order, the user's own keys in that
// table (env, timeouts). A file that is not TOML (or that Codex would
// refuse, such as a duplicate key) is refused, and the result is read back
// to check that it holds exactly the old settings plus mailfs's. envVars,
// when not nil, is set as the server's env_vars: the names of variables
// Codex passes on from its own environment (it passes an MCP server only a
// few, HOME and PATH among them, and none of mailfs's).
func editCodexMCP(old []byte, command string, args, envVars []string) ([]byte, error) {
	return checkedEdit(old, command, args, envVars, spliceMCP)
}

// checkedEdit is editCodexMCP with its splice given: the read-back holds
// whatever the splice did.
func checkedEdit(old []byte, command string, args, envVars []string, splice func([]byte, string, []string, []string) ([]byte, error)) ([]byte, error) {
	var before map[string]any
	if err := toml.Unmarshal(old, &before); err != nil {
		return nil, fmt.Errorf("not TOML (%v)", tomlError(err))
	}
	out, err := splice(old, command, args, envVars)
	if err != nil {
		return nil, err
	}
	var after map[string]any
	if err := toml.Unmarshal(out, &after); err != nil {
		return nil, fmt.Errorf("could not be edited in place (%v)", tomlError(err))
	}
	server := dig(after, mcpServer)
	if server == nil || server["command"] != command || !reflect.DeepEqual(server["args"], anySlice(args)) || envVars != nil && !reflect.DeepEqual(server["env_vars"], anySlice(envVars)) {
		return nil, errors.New("could not be edited in place (the server did not read back)")
	}
	// Everything but the keys set must read back as it was.
	keys := []string{"command", "args"}
	if envVars != nil {
		keys = append(keys, "env_vars")
	}
	was := dig(before, mcpServer)
	for _, k := range keys {
		delete(server, k)
		if was != nil {
			delete(was, k)
		}
	}
	if before == nil {
		before = map[string]any{}
	}
	prune(after)
	prune(before)
	if !reflect.DeepEqual(before, after) {
		return nil, errors.New("could not be edited in place (other settings would change)")
	}
	return out, nil
}

// spliceMCP sets command and args (and env_vars, when given) of
// [mcp_servers.mailfs] in the text, wherever and however the file spells
// that table, and leaves every other byte as it was: it finds where each
// key is and where a missing one goes (findMCP), then makes those edits.
func spliceMCP(old []byte, command string, args, envVars []string) ([]byte, error) {
	values := map[string]string{"command": tomlString(command), "args": tomlArray(args)}
	keys := []string{"command", "args"}
	if envVars != nil {
		values["env_vars"] = tomlArray(envVars)
		keys = append(keys, "env_vars")
	}
	spot, err := findMCP(old, values)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, k := range keys {
		if !spot.set[k] {
			missing = append(missing, k)
		}
	}
	edits := spot.edits
	if len(missing) > 0 {
		edits = append(edits, spot.add(old, missing, keys, values))
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
	out := bytes.Clone(old)
	for _, e := range edits {
		out = append(out[:e.at:e.at], append([]byte(e.text), out[e.end:]...)...)
	}
	return out, nil
}

// A tomlEdit replaces the bytes [at, end) of a file with text.
type tomlEdit struct {
	at, end int
	text    string
}

// mcpSpot is what findMCP found of the server's table in a file.
type mcpSpot struct {
	edits    []tomlEdit      // each key the server has, set to its new value
	set      map[string]bool // the keys those edits set
	insertAt int             // the line after the server's last key, or -1
	dotted   string          // how a key added there is spelt: its dotted prefix
	inline   int             // the closing brace of the server's inline table, or -1
}

// findMCP reads old as TOML and finds the server's keys, in a
// [mcp_servers.mailfs] table, as dotted keys under a parent table, or in
// inline tables on the way to it: values says which keys to set, and to
// what.
func findMCP(old []byte, values map[string]string) (*mcpSpot, error) {
	spot := &mcpSpot{set: map[string]bool{}, insertAt: -1, inline: -1}
	p := unstable.Parser{}
	p.Reset(old)
	// visit looks at a key-value under the table path prefix, and into
	// inline tables on the way to the server's.
	var visit func(kv *unstable.Node, prefix []string, inInline bool)
	visit = func(kv *unstable.Node, prefix []string, inInline bool) {
		full := append(slices.Clone(prefix), keyOf(kv.Key())...)
		start := int(kv.Raw.Offset)
		end := start + int(kv.Raw.Length)
		switch {
		case len(full) == 3 && slices.Equal(full[:2], mcpServer):
			if v, ok := values[full[2]]; ok {
				spot.edits = append(spot.edits, tomlEdit{start, end, keyText(p, kv) + " = " + v})
				spot.set[full[2]] = true
			}
			if !inInline { // new keys go on the line after the server's last
				spot.insertAt = lineEnd(old, end)
				spot.dotted = dottedPrefix(p, kv)
			}
		case len(full) <= 2 && slices.Equal(full, mcpServer[:len(full)]) && kv.Value().Kind == unstable.InlineTable:
			if len(full) == 2 {
				spot.inline = bytes.LastIndexByte(old[:end], '}')
			}
			it := kv.Value().Children()
			for it.Next() {
				if it.Node().Kind == unstable.KeyValue {
					visit(it.Node(), full, true)
				}
			}
		}
	}
	var table []string
	isArrayTable := false
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyOf(e.Key())
			isArrayTable = e.Kind == unstable.ArrayTable
			if !isArrayTable && slices.Equal(table, mcpServer) {
				spot.insertAt, spot.dotted = lineEnd(old, lastKeyEnd(e)), ""
			}
		case unstable.KeyValue:
			if !isArrayTable {
				visit(e, table, false)
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("not TOML (%v)", err)
	}
	return spot, nil
}

// add is the edit that gives the server the keys it lacks: inside its
// inline table, after its last key, or (no server at all) as a new
// [mcp_servers.mailfs] table of every key at the end of the file.
func (spot *mcpSpot) add(old []byte, missing, keys []string, values map[string]string) tomlEdit {
	var add strings.Builder
	switch {
	case spot.inline >= 0:
		inner := bytes.TrimSpace(old[bytes.LastIndexByte(old[:spot.inline], '{')+1 : spot.inline])
		for i, k := range missing {
			if i > 0 || len(inner) > 0 {
				add.WriteString(", ")
			}
			fmt.Fprintf(&add, "%s = %s", k, values[k])
		}
		at := spot.inline
		for at > 0 && (old[at-1] == ' ' || old[at-1] == '\t') {
			at--
		}
		return tomlEdit{at, at, add.String()}
	case spot.insertAt >= 0:
		for _, k := range missing {
			fmt.Fprintf(&add, "%s%s = %s\n", spot.dotted, k, values[k])
		}
		return tomlEdit{spot.insertAt, spot.insertAt, add.String()}
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		add.WriteString("\n")
	}
	if len(bytes.TrimSpace(old)) > 0 {
		add.WriteString("\n")
	}
	add.WriteString("[mcp_servers.mailfs]\n")
	for _, k := range keys {
		fmt.Fprintf(&add, "%s = %s\n", k, values[k])
	}
	return tomlEdit{len(old), len(old), add.String()}
}

// keyOf is a key's parts, unquoted.
func keyOf(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// keySpan is where a key is written: the offset of its first part, of its
// last part, and just past its last part.
func keySpan(key unstable.Iterator) (first, lastStart, end int) {
	first = -1
	for key.Next() {
		r := key.Node().Raw
		if first < 0 {
			first = int(r.Offset)
		}
		lastStart, end = int(r.Offset), int(r.Offset+r.Length)
	}
	return first, lastStart, end
}

// keyText is a key-value's key as written ("mcp_servers . mailfs.command").
func keyText(p unstable.Parser, kv *unstable.Node) string {
	first, _, end := keySpan(kv.Key())
	return string(p.Data()[first:end])
}

// dottedPrefix is the part of a dotted key before its last part, as
// written, dot included ("mcp_servers.mailfs."), or "" for a simple key.
func dottedPrefix(p unstable.Parser, kv *unstable.Node) string {
	first, lastStart, _ := keySpan(kv.Key())
	return string(p.Data()[first:lastStart])
}

// lastKeyEnd is the offset just past a table header's key.
func lastKeyEnd(table *unstable.Node) int {
	_, _, end := keySpan(table.Key())
	return end
}

// lineEnd is the offset just past the end of the line holding at.
func lineEnd(data []byte, at int) int {
	if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
		return at + i + 1
	}
	return len(data)
}

func tomlString(s string) string {
	b, _ := marshal(s) // JSON's escapes are TOML's
	return string(b)
}

func tomlArray(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// dig returns the table at path in a decoded document, or nil.
func dig(doc map[string]any, path []string) map[string]any {
	cur := doc
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

// prune removes tables left empty, recursively.
func prune(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			prune(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

// tomlError is a TOML error with its line, when the library knows it.
func tomlError(err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("line %d, column %d: %s", row, col, de.Error())
	}
	return err
}
