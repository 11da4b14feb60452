// Package grammar gives kong, for one call, the part of a program's
// grammar the call needs: a call that names its command gets a model of
// the global flags and that command only, and, unless it asks for help,
// one without help text. It is the same definition (the same struct
// types' fields and tags), less of it: kong builds a model of every
// command, and parses and interpolates every help tag, each time a program
// starts, which costs a per-turn hook more than its work (see
// docs/performance.md).
//
// Call [For] with the full grammar and the arguments; give kong
// [Call.Grammar]; run the parsed command with [Run].
//
// # Caveats
//
// A bare grammar (no help text) is a copy of the command's struct types
// made with reflect.StructOf, which has no methods: [Run] copies what kong
// parsed into the full grammar's value and calls the Run method there.
// Kong's own Run features (Provide methods, bindings other than the one
// argument) are not offered. Only fields kong walks into — commands
// (cmd), embedded structs (embed, anonymous) — are copied as bare types;
// flag and argument types are kept, with their methods.
package grammar

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/alecthomas/kong"
)

// A Call is the grammar one call is parsed with.
type Call struct {
	full  reflect.Value // a pointer to the full grammar's struct
	small reflect.Value // the pointer kong parses into: full, or a smaller copy
	bare  bool          // small's command types are copies without help tags
	// fields maps each struct type made here to the index, in the type it
	// was made from, of each of its fields.
	fields map[reflect.Type][]int
	// tags are the tags of the bare grammar's fields, all but help.
	tags []string
	// counterparts maps each struct kong filled in small to the same
	// struct in full, once Valid or Run has copied it (copyOnce).
	counterparts map[place]reflect.Value
}

// A place is where a struct is: its address alone would not tell a struct
// from its first field.
type place struct {
	addr uintptr
	t    reflect.Type
}

func placeOf(v reflect.Value) place { return place{v.Addr().Pointer(), v.Type()} }

// For returns the grammar for a call with args, given full, a pointer to
// the program's whole grammar (a struct whose cmd-tagged fields are its
// commands): when args name a command (after global flags only), a new
// struct holding full's global fields and that command's field, and,
// when nothing in args asks for help (-h, --help), without help tags;
// else full itself.
func For(full any, args []string) *Call {
	c := &Call{full: reflect.ValueOf(full), small: reflect.ValueOf(full), fields: map[reflect.Type][]int{}}
	t := c.full.Type().Elem()
	name := Command(full, args)
	if name == "" {
		return c
	}
	command, found := Field(t, name)
	if !found {
		return c
	}
	c.bare = !asksHelp(args)
	var fields []reflect.StructField
	var index []int
	for i := range t.NumField() {
		f := t.Field(i)
		if hasTag(f, "cmd") && f.Name != command.Name {
			continue
		}
		if c.bare {
			f = c.bareField(f)
		}
		fields = append(fields, reflect.StructField{Name: f.Name, PkgPath: f.PkgPath, Type: f.Type, Tag: f.Tag, Anonymous: f.Anonymous})
		index = append(index, i)
	}
	small := reflect.StructOf(fields)
	c.fields[small] = index
	c.small = reflect.New(small)
	return c
}

// Field returns the field of t, a grammar's struct type, that is the
// command kong calls name.
func Field(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); name != "" && hasTag(f, "cmd") && CommandName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// Whole returns the call for full itself: what a call's error is best
// reported from, as every command spells it.
func Whole(full any) *Call { return For(full, nil) }

// Grammar is what to give kong.New: a pointer to a struct.
func (c *Call) Grammar() any { return c.small.Interface() }

// Full reports whether the call is parsed with the whole grammar.
func (c *Call) Full() bool { return c.small == c.full }

// Vars returns the variables of vars the call's grammar uses: for a bare
// grammar, those its tags name (${name}), since kong interpolates every
// variable it is given into each flag and argument, used or not; else
// vars itself.
func (c *Call) Vars(vars kong.Vars) kong.Vars {
	if !c.bare {
		return vars
	}
	used := kong.Vars{}
	for name, value := range vars {
		if slices.ContainsFunc(c.tags, func(tag string) bool { return strings.Contains(tag, "${"+name) }) {
			used[name] = value
		}
	}
	return used
}

// Valid reports whether the values a bare grammar parsed pass the
// Validate methods kong would have called on the full grammar's commands
// (a bare copy has no methods, so kong called none): for each command on
// the path, Validate() error or Validate(*kong.Context) error, as kong
// has them. A call that is not Valid is parsed again with the whole
// grammar, where kong validates and says why as it always does. It is
// true for a call that was not bare.
func (c *Call) Valid(kctx *kong.Context) bool {
	if !c.bare {
		return true
	}
	c.copyOnce()
	for node := kctx.Selected(); node != nil; node = node.Parent {
		v, ok := c.counterparts[placeOf(node.Target)]
		if !ok {
			return false
		}
		switch x := v.Addr().Interface().(type) {
		case interface{ Validate() error }:
			if x.Validate() != nil {
				return false
			}
		case interface{ Validate(*kong.Context) error }:
			if x.Validate(kctx) != nil {
				return false
			}
		}
	}
	return true
}

// Run runs the command kctx (from kong parsing c.Grammar()) selected, as
// kctx.Run(arg) does: the Run(A) error method of the selected command and
// of each command above it that has one, the innermost first. A bare
// grammar's values are first copied into the full grammar's, whose
// methods are called.
func Run[A any](c *Call, kctx *kong.Context, arg A) error {
	if !c.bare {
		return kctx.Run(arg)
	}
	c.copyOnce()
	ran := false
	for node := kctx.Selected(); node != nil; node = node.Parent {
		v, ok := c.counterparts[placeOf(node.Target)]
		if !ok {
			return fmt.Errorf("grammar: no counterpart of %s in the full grammar", node.Path())
		}
		if r, ok := v.Addr().Interface().(interface{ Run(A) error }); ok {
			ran = true
			if err := r.Run(arg); err != nil {
				return err
			}
		}
	}
	if !ran {
		return fmt.Errorf("no Run() method found in hierarchy of %s", kctx.Selected().Summary())
	}
	return nil
}

// copyOnce copies the values kong parsed into the full grammar's, the
// first time Valid or Run needs them (once: what a Validate method changed
// there is what Run sees).
func (c *Call) copyOnce() {
	if c.counterparts == nil {
		c.counterparts = map[place]reflect.Value{}
		c.copy(c.full.Elem(), c.small.Elem())
	}
}

// copy sets dst's fields to those of src, a struct made here from dst's
// type: field by field; a struct made here in turn is copied into, and
// unexported fields, which kong leaves alone, are skipped.
func (c *Call) copy(dst, src reflect.Value) {
	c.counterparts[placeOf(src)] = dst
	for i, j := range c.fields[src.Type()] {
		d, s := dst.Field(j), src.Field(i)
		if _, made := c.fields[s.Type()]; made {
			c.copy(d, s)
		} else if src.Type().Field(i).IsExported() {
			d.Set(s)
		}
	}
}

// bareField returns f with its help tag removed and, when kong walks into
// its struct (a command, an embedded struct), its type a bare copy.
func (c *Call) bareField(f reflect.StructField) reflect.StructField {
	f.Tag = withoutHelp(f.Tag)
	c.tags = append(c.tags, string(f.Tag))
	walks := hasTag(f, "cmd") || hasTag(f, "embed") || f.Anonymous
	if !walks || f.Type.Kind() != reflect.Struct {
		return f
	}
	var fields []reflect.StructField
	var index []int
	for i := range f.Type.NumField() {
		sub := c.bareField(f.Type.Field(i))
		fields = append(fields, reflect.StructField{Name: sub.Name, PkgPath: sub.PkgPath, Type: sub.Type, Tag: sub.Tag, Anonymous: sub.Anonymous})
		index = append(index, i)
	}
	f.Type = reflect.StructOf(fields)
	c.fields[f.Type] = index
	if f.Anonymous {
		// StructOf takes no embedded field of an unexported type: kong
		// reads an embed tag as it reads an embedded struct.
		f.Anonymous, f.Name, f.PkgPath = false, embeddedName(f), ""
		f.Tag = reflect.StructTag(strings.TrimSpace(string(f.Tag) + ` embed:""`))
	}
	return f
}

// embeddedName is the exported name an embedded field's bare copy has.
func embeddedName(f reflect.StructField) string {
	r := []rune(f.Name)
	return "Embedded" + string(unicode.ToUpper(r[0])) + string(r[1:])
}

// withoutHelp returns tag without its help key, the other keys and
// values as they were. It reads the tag as reflect.StructTag.Lookup does
// (key:"Go-quoted value" pairs apart by spaces); from what is not in that
// format on, the tag is kept as it is.
func withoutHelp(tag reflect.StructTag) reflect.StructTag {
	var kept []string
	for s := strings.TrimLeft(string(tag), " "); s != ""; s = strings.TrimLeft(s, " ") {
		key, rest, _ := strings.Cut(s, ":")
		value, err := strconv.QuotedPrefix(rest)
		if key == "" || strings.ContainsAny(key, " \"\x7f") || err != nil || value[0] != '"' {
			kept = append(kept, s)
			break
		}
		if key != "help" {
			kept = append(kept, key+":"+value)
		}
		s = rest[len(value):]
	}
	return reflect.StructTag(strings.Join(kept, " "))
}

// asksHelp reports whether args ask for help: --help, or -h alone or in a
// group of short flags, before a "--".
func asksHelp(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--help", strings.HasPrefix(a, "--help="):
			return true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'h'):
			return true
		}
	}
	return false
}

// Command returns the command args name, given full, a pointer to the
// program's grammar (nil will do): their first word that is no flag, after
// only global flags by their long names (and the value of each that takes
// one); "" when another flag, or none, comes first.
func Command(full any, args []string) string {
	t := reflect.TypeOf(full).Elem()
	global := map[string]bool{} // --name: whether it takes a value
	for i := range t.NumField() {
		if f := t.Field(i); !hasTag(f, "cmd") {
			global["--"+CommandName(f)] = f.Type.Kind() != reflect.Bool
		}
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, _, joined := strings.Cut(arg, "=")
		valued, isGlobal := global[name]
		switch {
		case isGlobal && valued && !joined:
			i++ // its value
		case isGlobal && (valued || !joined):
		case strings.HasPrefix(arg, "-"):
			return ""
		default:
			return arg
		}
	}
	return ""
}

// CommandName is the name kong gives a field: its name tag, else the
// field's name in kebab case.
func CommandName(f reflect.StructField) string {
	if name := f.Tag.Get("name"); name != "" {
		return name
	}
	var b strings.Builder
	for i, r := range f.Name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hasTag(f reflect.StructField, key string) bool {
	_, ok := f.Tag.Lookup(key)
	return ok
}
