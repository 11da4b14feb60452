package main

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// onlyCommand returns, for a call that names its command, a new value of
// a struct type holding cli's global flags and that one command's field,
// tags and all, so that kong builds (and interpolates) the model of one
// command instead of all of them: the same definition, less of it. It
// reports false, and the full grammar should be used, for a call without a
// command, with an unknown one, with a flag before it other than --root,
// for --man, or from a shell asking for completions.
func onlyCommand(args []string) (reflect.Value, bool) {
	if os.Getenv("COMP_LINE") != "" || slices.Contains(args, "--man") { // both need every command
		return reflect.Value{}, false
	}
	name := commandOf(args)
	if name == "" {
		return reflect.Value{}, false
	}
	t := reflect.TypeFor[cli]()
	var fields []reflect.StructField
	found := false
	for i := range t.NumField() {
		f := t.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); isCmd {
			if commandName(f) != name {
				continue
			}
			found = true
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
	}
	if !found {
		return reflect.Value{}, false
	}
	return reflect.New(reflect.StructOf(fields)), true
}

// commandName is the name kong gives a command field: its name tag, else
// the field's name in kebab case.
func commandName(f reflect.StructField) string {
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

// commandOf returns the command args name, or "" when a flag other than
// --root comes before it or there is none.
func commandOf(args []string) string {
	for i := 0; i < len(args); i++ {
		switch arg := args[i]; {
		case arg == "--root", arg == "--host":
			i++
		case strings.HasPrefix(arg, "--root="), strings.HasPrefix(arg, "--host="):
		case strings.HasPrefix(arg, "-"):
			return ""
		default:
			return arg
		}
	}
	return ""
}

// isBrief reports whether args run a command that finishes in moments
// (its field in cli is tagged brief), which needs no signal handling:
// killed, it leaves what the store's guarantees leave (a dot-temp at
// worst, which fsck removes). A command that can wait (send --wait-for)
// or loops is not brief.
func isBrief(args []string) bool {
	name := commandOf(args)
	t := reflect.TypeFor[cli]()
	for i := range t.NumField() {
		f := t.Field(i)
		if _, brief := f.Tag.Lookup("brief"); brief && commandName(f) == name {
			return !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--wait") })
		}
	}
	return false
}
