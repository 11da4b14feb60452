package quickargs

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

type testCmd struct {
	To    []string       `arg:"" help:"Who."`
	Subj  string         `short:"s" name:"subject" required:"" help:"What."`
	Prio  string         `default:"normal" enum:"urgent,normal"`
	CC    []string       `sep:","`
	Field []string       `sep:"none"`
	Limit int            `default:"3"`
	Wait  *time.Duration `placeholder:"D"`
	Dir   string         `type:"path"`
	From  string         `env:"TEST_FROM"`
	JSON  bool
}

type testOther struct {
	Hooked hooked `arg:""`
}

type hooked struct{ S string }

func (hooked) Validate() error { return nil }

type testCLI struct {
	Root  string    `env:"TEST_ROOT"`
	Send  testCmd   `cmd:""`
	Other testOther `cmd:""`
}

func options(env map[string]string) Options {
	return Options{
		Command: func(name string) (int, bool) {
			if name == "send" {
				return 1, true
			}
			return 0, false
		},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Duration:  time.ParseDuration,
	}
}

func TestParseFillsWhatKongWould(t *testing.T) {
	var c testCLI
	cmd, ok := Parse(&c, []string{"--root", "r", "send", "a", "b", "-s", "hi", "--cc=x,y", "--field", "K=v,w", "--wait", "2s", "--dir", "d", "--json"}, options(map[string]string{"TEST_FROM": "env-from"}))
	if !ok {
		t.Fatal("declined")
	}
	if cmd != &c.Send {
		t.Fatalf("returned %v, not the send command", cmd)
	}
	two := 2 * time.Second
	abs, _ := filepath.Abs("d")
	want := testCmd{To: []string{"a", "b"}, Subj: "hi", Prio: "normal", CC: []string{"x", "y"}, Field: []string{"K=v,w"}, Limit: 3, Wait: &two, Dir: abs, From: "env-from", JSON: true}
	if !reflect.DeepEqual(c.Send, want) || c.Root != "r" {
		t.Fatalf("filled %+v root %q, want %+v root r", c.Send, c.Root, want)
	}
}

func TestParseDeclinesWhatIsKongs(t *testing.T) {
	for _, tc := range []struct {
		why  string
		args []string
		env  map[string]string
	}{
		{"no command", []string{"--root", "r"}, nil},
		{"a command not offered", []string{"other", "x"}, nil},
		{"an unknown command", []string{"bogus"}, nil},
		{"a required flag missing", []string{"send", "a"}, nil},
		{"a required argument missing", []string{"send", "-s", "hi"}, nil},
		{"help", []string{"send", "a", "-s", "hi", "--help"}, nil},
		{"an unknown flag", []string{"send", "a", "-s", "hi", "--bogus"}, nil},
		{"a flag given twice", []string{"send", "a", "-s", "hi", "-s", "ho"}, nil},
		{"a switch given a value", []string{"send", "a", "-s", "hi", "--json=false"}, nil},
		{"a value that starts with a dash", []string{"send", "a", "-s", "-x"}, nil},
		{"an empty value", []string{"send", "a", "-s", ""}, nil},
		{"a flag without its value", []string{"send", "a", "-s"}, nil},
		{"--", []string{"send", "-s", "hi", "--", "a"}, nil},
		{"joined short flag", []string{"send", "a", "-shi"}, nil},
		{"not in the enum", []string{"send", "a", "-s", "hi", "--prio", "low"}, nil},
		{"an int kong reads its own way", []string{"send", "a", "-s", "hi", "--limit", "010"}, nil},
		{"a bad duration", []string{"send", "a", "-s", "hi", "--wait", "soon"}, nil},
		{"a home-relative path", []string{"send", "a", "-s", "hi", "--dir", "~/d"}, nil},
		{"an escaped separator", []string{"send", "a", "-s", "hi", "--cc", `x\,y`}, nil},
		{"an empty environment variable", []string{"send", "a", "-s", "hi"}, map[string]string{"TEST_FROM": ""}},
		{"words after a flag that ended the list", []string{"send", "a", "-s", "hi", "b"}, nil},
	} {
		var c testCLI
		if _, ok := Parse(&c, tc.args, options(tc.env)); ok {
			t.Errorf("%s: Parse read %q, which is kong's to read", tc.why, tc.args)
		}
	}
	opt := options(nil)
	opt.Command = func(name string) (int, bool) { return 2, name == "other" }
	var c testCLI
	if _, ok := Parse(&c, []string{"other", "x"}, opt); ok {
		t.Error("Parse read a command whose argument has a kong hook (Validate)")
	}
}

func TestFlagName(t *testing.T) {
	for in, want := range map[string]string{"ReplyTo": "reply-to", "JSON": "json", "CC": "cc", "MaxBytes": "max-bytes", "TTL": "ttl", "A": "a"} {
		if got := flagName(in); got != want {
			t.Errorf("flagName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseTagReadsAsReflectDoes: parseTag finds the keys
// reflect.StructTag.Lookup finds, each with the value it gives, escapes
// included (but help and placeholder, left as the tag spells them).
func TestParseTagReadsAsReflectDoes(t *testing.T) {
	for _, tag := range []reflect.StructTag{
		`help:"plain" short:"s"`,
		`help:"a \"quoted\" word, a \\ backslash" name:"x"`,
		`default:"a \"quoted\" word" enum:"a \"quoted\" word,b"`,
		`default:"" enum:",a,b"`,
		`arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mail."`,
	} {
		tags, ok := parseTag(tag)
		if !ok || len(tags) == 0 {
			t.Fatalf("parseTag(%s) failed", tag)
		}
		for k, v := range tags {
			if k == "help" || k == "placeholder" {
				continue
			}
			if want, _ := tag.Lookup(k); v != want {
				t.Errorf("%s: %s = %q, reflect reads %q", tag, k, v, want)
			}
		}
	}
	if _, ok := parseTag(`help:"unterminated`); ok {
		t.Error("parseTag read an unterminated tag")
	}
}
