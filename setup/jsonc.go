package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// A hookEvent is one of mailfs's hook events as a runtime names it.
type hookEvent struct{ mailfs, runtime, matcher string }

// editHooks merges mailfs's hooks into a JSON settings file (Claude Code's
// settings.json, Codex's hooks.json) or a JSON-with-comments one (Gemini
// CLI's settings.json), editing it in place: comments, order, formatting and
// every key mailfs does not own are kept byte for byte. Each event gets
// mailfs's group (group(ev)); mailfs's old entries, whatever the binary's
// path or the agent, are removed, and a group already as wanted is left
// where it is, so a second run changes nothing.
func editHooks(old []byte, events []hookEvent, group func(hookEvent) map[string]any) ([]byte, error) {
	if len(bytes.TrimSpace(old)) == 0 {
		return freshHooks(events, group), nil
	}
	v, root, err := parseObject(old)
	if err != nil {
		return nil, err
	}
	unit := indentUnit(old)
	hooks := member(root, "hooks")
	if hooks == nil {
		fresh := map[string]any{}
		var order []string
		for _, ev := range events {
			fresh[ev.runtime] = []any{group(ev)}
			order = append(order, ev.runtime)
		}
		root.Members = append(root.Members, newMember("hooks", ordered{order, fresh}, 1, unit))
	} else {
		obj, ok := hooks.Value.(*hujson.Object)
		if !ok {
			return nil, errors.New(`"hooks" is not an object`)
		}
		for _, ev := range events {
			want := group(ev)
			m := member(obj, ev.runtime)
			if m == nil {
				obj.Members = append(obj.Members, newMember(ev.runtime, []any{want}, 2, unit))
				continue
			}
			arr, ok := m.Value.(*hujson.Array)
			if !ok {
				return nil, fmt.Errorf("hooks.%s is not a list", ev.runtime)
			}
			if !mergeGroups(arr, want) {
				arr.Elements = append(arr.Elements, newValue(want, 3, unit))
			}
		}
	}
	v.UpdateOffsets()
	out := v.Pack()
	// What is written must read back: standard JSON where the file was.
	std, err := hujson.Standardize(bytes.Clone(out))
	if err == nil {
		err = json.Unmarshal(std, new(map[string]any))
	}
	if err != nil {
		return nil, fmt.Errorf("could not be edited in place (%v)", err)
	}
	return out, nil
}

// mergeGroups removes mailfs's hooks from an event's list of groups,
// keeping every other hook, and reports whether the wanted group was there
// already (then it is kept, in its place, and only other copies go).
func mergeGroups(arr *hujson.Array, want map[string]any) (kept bool) {
	var out []hujson.Value
	for _, el := range arr.Elements {
		if !kept && sameJSON(el, want) {
			kept = true
			out = append(out, el)
			continue
		}
		obj, ok := el.Value.(*hujson.Object)
		if !ok {
			out = append(out, el)
			continue
		}
		hm := member(obj, "hooks")
		if hm == nil {
			out = append(out, el)
			continue
		}
		list, ok := hm.Value.(*hujson.Array)
		if !ok {
			out = append(out, el)
			continue
		}
		before := len(list.Elements)
		list.Elements = slices.DeleteFunc(list.Elements, func(h hujson.Value) bool {
			var entry struct{ Command string }
			return decode(h, &entry) == nil && ours().MatchString(entry.Command)
		})
		if len(list.Elements) == 0 && before > 0 {
			continue // the group held only mailfs's hooks
		}
		if len(list.Elements) > 0 {
			list.Elements[len(list.Elements)-1].AfterExtra = nil // no trailing comma left behind
		}
		out = append(out, el)
	}
	if len(out) > 0 && len(out) < len(arr.Elements) {
		out[len(out)-1].AfterExtra = nil
	}
	arr.Elements = out
	return kept
}

// member returns obj's member named name (its value), or nil.
func member(obj *hujson.Object, name string) *hujson.Value {
	for i := range obj.Members {
		var n string
		if decode(obj.Members[i].Name, &n) == nil && n == name {
			return &obj.Members[i].Value
		}
	}
	return nil
}

// decode reads a JSONC value as standard JSON into out.
func decode(v hujson.Value, out any) error {
	c := v.Clone()
	c.Standardize()
	return json.Unmarshal(c.Pack(), out)
}

// sameJSON reports whether v holds the same JSON as want.
func sameJSON(v hujson.Value, want any) bool {
	var got, w any
	data, _ := json.Marshal(want)
	json.Unmarshal(data, &w)
	return decode(v, &got) == nil && reflect.DeepEqual(got, w)
}

// newMember is a new object member, on its own line at depth.
func newMember(name string, value any, depth int, unit string) hujson.ObjectMember {
	key, _ := json.Marshal(name)
	val := newValue(value, depth, unit)
	val.BeforeExtra = hujson.Extra(" ")
	return hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: hujson.Extra("\n" + strings.Repeat(unit, depth)), Value: hujson.Literal(key)},
		Value: val,
	}
}

// newValue is a value indented for depth, on its own line.
func newValue(value any, depth int, unit string) hujson.Value {
	data := marshalIndent(value, strings.Repeat(unit, depth), unit)
	v, _ := hujson.Parse(data)
	v.BeforeExtra = hujson.Extra("\n" + strings.Repeat(unit, depth))
	v.AfterExtra = nil
	return v
}

// ordered is a JSON object whose keys keep the order of keys.
type ordered struct {
	keys []string
	m    map[string]any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		val, err := marshal(o.m[k])
		if err != nil {
			return nil, err
		}
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// freshHooks is a new settings file holding only mailfs's hooks.
func freshHooks(events []hookEvent, group func(hookEvent) map[string]any) []byte {
	m := map[string]any{}
	var order []string
	for _, ev := range events {
		m[ev.runtime] = []any{group(ev)}
		order = append(order, ev.runtime)
	}
	return append(marshalIndent(map[string]any{"hooks": ordered{order, m}}, "", "  "), '\n')
}

// marshal writes v as JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// marshalIndent writes v as indented JSON without HTML escaping.
func marshalIndent(v any, prefix, unit string) []byte {
	data, _ := marshal(v)
	var b bytes.Buffer
	json.Indent(&b, data, prefix, unit)
	return b.Bytes()
}

// indentUnit is the indentation a JSON file uses for one level: that of
// its first indented line, or two spaces.
func indentUnit(data []byte) string {
	for _, line := range strings.Split(string(data), "\n")[1:] {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}

// jsonRaw is JSON already encoded.
type jsonRaw []byte

func (r jsonRaw) MarshalJSON() ([]byte, error) { return r, nil }

// editMCPServers registers mailfs's MCP server in a JSON settings file's
// mcpServers (Gemini CLI's and Qwen Code's, which both read it), editing
// in place: the server's command and args are set, the user's own keys in
// its entry (env, timeout, trust) and everything else in the file kept,
// comments included. What is written must read back.
func editMCPServers(old []byte, command string, args []string) ([]byte, error) {
	server := ordered{[]string{"command", "args"}, map[string]any{"command": command, "args": args}}
	return editServer(old, "{}\n", "mcpServers", server, func(out []byte) bool {
		var back struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		std, err := hujson.Standardize(bytes.Clone(out))
		return err == nil && json.Unmarshal(std, &back) == nil &&
			back.MCPServers["mailfs"].Command == command && slices.Equal(back.MCPServers["mailfs"].Args, args)
	})
}

// editOpenCodeMCP registers mailfs's MCP server in an opencode.json, in
// place: "mcp": {"mailfs": {"type": "local", "command": [bin, args…],
// "enabled": true}}, the user's own keys in mailfs's entry and everything
// else in the file kept, comments included.
func editOpenCodeMCP(old []byte, command string, args []string) ([]byte, error) {
	cmd := append([]string{command}, args...)
	server := ordered{[]string{"type", "command", "enabled"}, map[string]any{"type": "local", "command": cmd, "enabled": true}}
	fresh := "{\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n"
	return editServer(old, fresh, "mcp", server, func(out []byte) bool { return slices.Equal(openCodeMCP(out), cmd) })
}

// editServer sets section.mailfs in a JSON file (fresh when it is empty)
// to server's keys, in place: the user's own keys in that entry and
// everything else in the file kept, comments included. readsBack checks
// the result.
func editServer(old []byte, fresh, section string, server ordered, readsBack func([]byte) bool) ([]byte, error) {
	if len(bytes.TrimSpace(old)) == 0 {
		old = []byte(fresh)
	}
	v, root, err := parseObject(old)
	if err != nil {
		return nil, err
	}
	unit := indentUnit(old)
	servers := member(root, section)
	switch {
	case servers == nil:
		root.Members = append(root.Members, newMember(section, map[string]any{"mailfs": server}, 1, unit))
	default:
		obj, ok := servers.Value.(*hujson.Object)
		if !ok {
			return nil, fmt.Errorf("%q is not an object", section)
		}
		entry := member(obj, "mailfs")
		if entry == nil {
			obj.Members = append(obj.Members, newMember("mailfs", server, 2, unit))
			break
		}
		eobj, ok := entry.Value.(*hujson.Object)
		if !ok {
			return nil, fmt.Errorf("%q is not an object", section+".mailfs")
		}
		for _, k := range server.keys {
			if m := member(eobj, k); m != nil {
				m.Value = newValue(server.m[k], 3, unit).Value
			} else {
				eobj.Members = append(eobj.Members, newMember(k, server.m[k], 3, unit))
			}
		}
	}
	v.UpdateOffsets()
	out := v.Pack()
	if !readsBack(out) {
		return nil, errors.New("could not be edited in place (the server did not read back)")
	}
	return out, nil
}

// openCodeMCP reads opencode.json's mailfs entry's command.
func openCodeMCP(data []byte) []string {
	var doc struct {
		MCP map[string]struct {
			Command []string `json:"command"`
		} `json:"mcp"`
	}
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil || json.Unmarshal(std, &doc) != nil {
		return nil
	}
	return doc.MCP["mailfs"].Command
}

// openCodeServes reports whether opencode.json's mailfs server serves
// agent.
func openCodeServes(data []byte, agent string) bool {
	cmd := openCodeMCP(data)
	if len(cmd) < 2 {
		return false
	}
	args := make([]any, len(cmd)-1)
	for i, a := range cmd[1:] {
		args[i] = a
	}
	return servesAgent(args, agent)
}

// parseObject parses a settings file (JSON with comments) whose top level
// must be an object, and returns the value and that object.
func parseObject(data []byte) (hujson.Value, *hujson.Object, error) {
	v, err := hujson.Parse(data)
	if err != nil {
		return v, nil, fmt.Errorf("not JSON (%v)", err)
	}
	root, ok := v.Value.(*hujson.Object)
	if !ok {
		return v, nil, errors.New("not a JSON object")
	}
	return v, root, nil
}
