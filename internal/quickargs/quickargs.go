// Package quickargs parses the everyday calls of a command line described
// the way kong describes one (a struct of global flags and commands, with
// kong's struct tags) without building kong's model, which costs more
// than a hot command's own work: a prompt hook or a send pays it on every
// call.
//
// It is a subset, and it says so: Parse either fills the struct exactly as
// kong would or declines, and the caller then lets kong parse the call.
// So every error message, help page, completion and unusual form (a value
// that starts with "-", "--", "-sVALUE", "--flag=" with nothing, a flag
// given twice, an enum value that is not in the list, an empty
// environment variable) stays kong's. What it parses:
//
//   - the command's name, with global flags before or after it;
//   - positional arguments (string, optional or not, and a final
//     []string), flags as --name VALUE, --name=VALUE or -s VALUE, and
//     switches (bool) as --name or -s;
//   - the tags help, placeholder, short, name, default, enum, env,
//     required, optional, sep, hidden, xor, arg, brief, cmd and
//     type:"path";
//   - global flags of types other than struct (and embedded structs of
//     them): a struct-typed field is a command, whose tags (help text and
//     all) are read only when the call names it, found through
//     Options.Command;
//   - values of type string, *string, bool, int, []string (split at sep,
//     by default ","), and time.Duration and *time.Duration as
//     Options.Duration reads them.
//
// A command whose grammar needs more (another tag, another type, kong
// hooks such as Validate or AfterApply, subcommands) is never parsed
// here. cmd/mailfs's TestQuickArgsAgreeWithKong and its fuzz target hold
// the promise: on generated calls, wherever Parse accepts, kong accepts
// and fills the same values.
package quickargs

import (
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Options is what Parse needs beyond the grammar.
type Options struct {
	// Command returns the index of the grammar's field for the command
	// named name, and whether Parse may parse a call of it (false: the
	// call declines).
	Command func(name string) (index int, ok bool)
	// LookupEnv reads the environment (os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Duration reads a time.Duration value as the caller's kong mapper
	// does; an error declines.
	Duration func(string) (time.Duration, error)
}

// Parse fills grammar, a pointer to the command line's struct, from args
// as kong would, and returns a pointer to the chosen command's field; or
// reports false, having perhaps filled part of grammar, when the call
// needs kong. The caller must then parse into a fresh value.
func Parse(grammar any, args []string, opt Options) (any, bool) {
	root := reflect.ValueOf(grammar)
	if root.Kind() != reflect.Pointer || root.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	p := parser{opt: opt, grammar: root.Elem(), long: map[string]*field{}, short: map[rune]*field{}}
	// The global flags: the grammar's fields that are not struct-typed
	// commands (their tags, help text and all, are read only for the
	// command chosen).
	t := p.grammar.Type()
	for i := range t.NumField() {
		if sf := t.Field(i); (sf.Type.Kind() != reflect.Struct || sf.Anonymous) && !p.add(p.grammar.Field(i), sf, true) {
			return nil, false
		}
	}
	if !p.scan(args) || !p.command.IsValid() || !p.finish() {
		return nil, false
	}
	return p.command.Addr().Interface(), true
}

// choose takes the command named name, with its flags and arguments.
func (p *parser) choose(name string) bool {
	i, ok := p.opt.Command(name)
	if !ok || i < 0 || i >= p.grammar.NumField() {
		return false
	}
	sf := p.grammar.Type().Field(i)
	tags, ok := parseTag(sf.Tag)
	if _, isCmd := tags["cmd"]; !ok || !isCmd || sf.Type.Kind() != reflect.Struct || sf.Anonymous {
		return false
	}
	p.command = p.grammar.Field(i)
	return !hasHooks(p.command.Addr()) && p.addStruct(p.command)
}

// field is one flag or positional argument of the grammar.
type field struct {
	v     reflect.Value
	tags  map[string]string
	arg   bool
	given bool
	// unknown marks a global field of a type Parse cannot fill (a
	// version flag, say): fine while the call does not give it.
	unknown bool
}

type parser struct {
	opt     Options
	grammar reflect.Value // the struct
	command reflect.Value // the chosen command's field, once its name is read
	long    map[string]*field
	short   map[rune]*field
	fields  []*field
	args    []*field // positional, in order
}

// allowed are the tags Parse understands; a field with any other declines.
var allowed = []string{"help", "placeholder", "short", "name", "default", "enum", "env", "required", "optional", "sep", "hidden", "arg", "brief", "type", "xor"}

// add takes one struct field into the parser: a flag, a positional
// argument, or (anonymous) a struct whose fields kong flattens.
func (p *parser) add(v reflect.Value, sf reflect.StructField, global bool) bool {
	if !sf.IsExported() && !sf.Anonymous {
		return true // kong ignores it
	}
	tags, ok := parseTag(sf.Tag)
	if !ok {
		return false
	}
	if _, isCmd := tags["cmd"]; isCmd {
		return false // a subcommand, or a command that is not a struct
	}
	for k, val := range tags {
		if !slices.Contains(allowed, k) || k != "help" && k != "placeholder" && strings.Contains(val, "${") || (k == "type" && val != "path") || (k == "env" && strings.Contains(val, ",")) {
			return false
		}
	}
	if sf.Anonymous {
		if v.Kind() != reflect.Struct || len(tags) != 0 || hasHooks(v.Addr()) {
			return false
		}
		return p.addStruct(v)
	}
	f := &field{v: v, tags: tags}
	if !supported(v.Type(), tags) {
		if !global {
			return false
		}
		f.unknown = true
	}
	if _, isArg := tags["arg"]; isArg {
		if global || (len(p.args) > 0 && p.args[len(p.args)-1].v.Kind() == reflect.Slice) {
			return false // a positional after a slice never fills
		}
		f.arg = true
		p.args = append(p.args, f)
		p.fields = append(p.fields, f)
		return true
	}
	name := tags["name"]
	if name == "" {
		name = flagName(sf.Name)
	}
	if p.long[name] != nil {
		return false
	}
	p.long[name] = f
	if s := tags["short"]; s != "" {
		r := []rune(s)
		if len(r) != 1 || p.short[r[0]] != nil {
			return false
		}
		p.short[r[0]] = f
	}
	p.fields = append(p.fields, f)
	return true
}

func (p *parser) addStruct(v reflect.Value) bool {
	t := v.Type()
	for i := range t.NumField() {
		if !p.add(v.Field(i), t.Field(i), false) {
			return false
		}
	}
	return true
}

// scan reads the call's words (the command's name taken out).
func (p *parser) scan(args []string) bool {
	next := 0 // the next positional argument
	for i := 0; i < len(args); i++ {
		arg := args[i]
		var f *field
		value, joined := "", false
		switch {
		case arg == "--" || arg == "-":
			return false
		case strings.HasPrefix(arg, "--"):
			var name string
			name, value, joined = strings.Cut(arg[2:], "=")
			f = p.long[name]
		case strings.HasPrefix(arg, "-"):
			if len(arg) != 2 {
				return false
			}
			f = p.short[rune(arg[1])]
		case !p.command.IsValid():
			if !p.choose(arg) {
				return false
			}
			continue
		default:
			if next >= len(p.args) {
				return false
			}
			f = p.args[next]
			if f.v.Kind() != reflect.Slice {
				next++
			}
			if !p.set(f, arg) {
				return false
			}
			continue
		}
		if f == nil || f.unknown {
			return false
		}
		if next < len(p.args) && p.args[next].given {
			next++ // a flag ends the words a []string argument takes
		}
		if f.v.Kind() == reflect.Bool {
			if joined || f.given {
				return false
			}
			f.v.SetBool(true)
			f.given = true
			continue
		}
		if !joined {
			if i+1 == len(args) {
				return false
			}
			i++
			value = args[i]
		}
		if !p.set(f, value) {
			return false
		}
	}
	return true
}

// set gives f one value from the command line.
func (p *parser) set(f *field, value string) bool {
	if value == "" || strings.HasPrefix(value, "-") || (f.given && f.v.Kind() != reflect.Slice) {
		return false
	}
	f.given = true
	return p.decode(f, value)
}

// decode reads value into f's variable by its type.
func (p *parser) decode(f *field, value string) bool {
	v := f.v
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == reflect.TypeFor[time.Duration]():
		if p.opt.Duration == nil {
			return false
		}
		d, err := p.opt.Duration(value)
		if err != nil {
			return false
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		if f.tags["type"] == "path" {
			if strings.HasPrefix(value, "~") {
				return false // kong asks the user database
			}
			abs, err := filepath.Abs(value)
			if err != nil {
				return false
			}
			value = abs
		}
		v.SetString(value)
	case v.Kind() == reflect.Int:
		n, err := strconv.Atoi(value)
		if err != nil || strconv.Itoa(n) != value {
			return false // kong reads 010 and 0x10 its own way
		}
		v.SetInt(int64(n))
	case v.Kind() == reflect.Slice:
		parts := []string{value}
		if sep := f.tags["sep"]; sep != "none" {
			if sep == "" {
				sep = ","
			}
			if f.arg && strings.Contains(value, ",") || strings.Contains(value, `\`) {
				return false
			}
			parts = strings.Split(value, sep)
			if slices.Contains(parts, "") {
				return false
			}
		}
		v.Set(reflect.AppendSlice(v, reflect.ValueOf(parts)))
	default:
		return false
	}
	return true
}

// finish gives what the call left out its environment variable or
// default, and checks what kong checks: required values, enums.
func (p *parser) finish() bool {
	xor := map[string]bool{}
	for _, f := range p.fields {
		if group, ok := f.tags["xor"]; ok && f.given {
			if strings.Contains(group, ",") || xor[group] {
				return false // kong names the clash
			}
			xor[group] = true
		}
	}
	for _, f := range p.fields {
		if f.unknown {
			continue
		}
		if !f.given {
			if env, ok := f.tags["env"]; ok {
				if value, set := p.opt.LookupEnv(env); set {
					if value == "" || f.v.Kind() == reflect.Bool || !p.decode(f, value) {
						return false
					}
					f.given = true
				}
			}
		}
		if !f.given {
			if def, ok := f.tags["default"]; ok {
				if f.v.Kind() == reflect.Bool || f.v.Kind() == reflect.Pointer || f.v.Kind() == reflect.Slice || f.tags["type"] == "path" {
					return false
				}
				if def != "" && !p.decode(f, def) {
					return false
				}
			} else {
				_, optional := f.tags["optional"]
				_, required := f.tags["required"]
				if required || (f.arg && !optional) {
					return false
				}
			}
		}
		if enum, ok := f.tags["enum"]; ok {
			if f.v.Kind() != reflect.String || !slices.Contains(strings.Split(enum, ","), f.v.String()) {
				return false
			}
		}
	}
	return true
}

// supported reports whether Parse can fill a variable of type t.
func supported(t reflect.Type, tags map[string]string) bool {
	if _, ok := tags["type"]; ok && t.Kind() != reflect.String {
		return false
	}
	switch t {
	case reflect.TypeFor[string](), reflect.TypeFor[*string](), reflect.TypeFor[bool](), reflect.TypeFor[int](),
		reflect.TypeFor[[]string](), reflect.TypeFor[time.Duration](), reflect.TypeFor[*time.Duration]():
		return true
	}
	return false
}

// hasHooks reports whether v (a pointer) has a method kong would call
// while parsing.
func hasHooks(v reflect.Value) bool {
	for _, m := range []string{"BeforeReset", "BeforeResolve", "BeforeApply", "AfterApply", "Validate", "Decode"} {
		if v.MethodByName(m).IsValid() {
			return true
		}
	}
	return false
}

// parseTag splits a struct tag into its keys and values, as
// reflect.StructTag.Lookup reads them; false for a tag it cannot read. The
// values of help and placeholder, which parsing never reads, are left as
// the tag spells them (escapes and all).
func parseTag(tag reflect.StructTag) (map[string]string, bool) {
	tags := make(map[string]string, 8)
	s := string(tag)
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return tags, true
		}
		colon := strings.Index(s, `:"`)
		if colon <= 0 || strings.ContainsAny(s[:colon], " \"") {
			return nil, false
		}
		key := s[:colon]
		rest := s[colon+1:]
		end := 1
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(rest) {
			return nil, false
		}
		value := rest[1:end]
		if key != "help" && key != "placeholder" && strings.Contains(value, `\`) {
			var err error
			if value, err = strconv.Unquote(rest[:end+1]); err != nil {
				return nil, false
			}
		}
		if _, dup := tags[key]; dup {
			return nil, false
		}
		tags[key] = value
		s = rest[end+1:]
	}
}

// flagName is kong's name for a field: its words in lower case, joined by
// dashes, a run of capitals counting as one word (ReplyTo: reply-to, JSON:
// json, MaxBytes: max-bytes).
func flagName(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1]))) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
