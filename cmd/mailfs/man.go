package main

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/alecthomas/kong"
	"github.com/muesli/mango"
	"github.com/muesli/roff"

	"github.com/mailfs/mailfs/internal/buildinfo"
)

// manFlag prints the man page: mango-kong's page of every command and
// flag, with a heading, a description and an exit status section of its
// own (mango-kong would put the one-line summary in the heading and turn
// the --help table into a paragraph per line).
type manFlag bool

// manDescription is the page's DESCRIPTION.
const manDescription = `mailfs keeps the mail of a town of coding agents in files: every message is one JSON file under the root's state/mail/<agent>/, written durably and atomically, so that agents, hooks, shell scripts and git all read and write the same tree, with no database and no server. Each command below reads or changes that tree; "mailfs demo" shows them at work.`

func (manFlag) BeforeApply(app *kong.Kong) error {
	help := strings.Split(strings.TrimSpace(app.Model.Help), "\n")
	page := mango.NewManPage(1, app.Model.Name, help[0]).WithLongDescription(manDescription)
	addManCommand(page, app.Model.Node, nil)
	var status []string
	for _, line := range strings.Split(exitHelp, "\n")[1:] {
		if strings.HasPrefix(line, "       ") { // a continued line
			status[len(status)-1] += " " + strings.TrimSpace(line)
			continue
		}
		code, what, _ := strings.Cut(strings.TrimSpace(line), " ")
		status = append(status, code+": "+strings.TrimSpace(what))
	}
	for i := range status {
		status[i] += "."
	}
	page = page.WithSection("Exit status", "The same for every command.\n"+strings.Join(status, "\n"))
	fmt.Fprintln(app.Stdout, strings.TrimSuffix(manParagraphs(manHeading(page.Build(roff.NewDocument()), buildinfo.Version())), "\n"))
	app.Exit(0)
	return nil
}

// addManCommand adds node and its children to the page, as mango-kong
// does, but with each paragraph of a command's help on one line: mango
// makes a paragraph of every line it is given. Indented lines (tables,
// examples) stay lines of their own.
func addManCommand(page *mango.ManPage, node *kong.Node, parent *mango.Command) {
	name := node.Summary()
	if parent == nil {
		name = node.Name
	}
	item := mango.NewCommand(name, node.Help, reflow(node.Detail))
	if parent != nil {
		// mango writes a command's usage on its tag's line, as the rest of
		// a synopsis: starting it on a line of its own makes the command's
		// name the tag and its help the paragraph below it, summary first.
		// (mango would then indent the summary again: it is said once.)
		item = mango.NewCommand(name, "", "\n"+strings.TrimSpace(node.Help+"\n\n"+reflow(node.Detail)))
	}
	if parent == nil {
		page.Root = *item
		item = &page.Root
	} else if err := parent.AddCommand(item); err != nil {
		panic(err) // kong has checked the structure
	}
	for _, child := range node.Children {
		if !child.Hidden {
			addManCommand(page, child, item)
		}
	}
	for _, flag := range node.Flags {
		if flag.Hidden {
			continue
		}
		short := ""
		if flag.Short != 0 {
			short = string(flag.Short)
		}
		// roff writes a flag's usage as a format (Document.Text's writef):
		// a "%" in it ("%3", a tmux pane) would print as "%!,(MISSING)".
		usage := strings.ReplaceAll(flag.Help, "%", "%%")
		item.AddFlag(mango.Flag{Name: strings.TrimPrefix(flag.Summary(), "--"), Short: short, Usage: usage, PFlag: true})
	}
}

// reflow joins the lines of each paragraph of help text into one; blank
// lines and indented lines are kept as they are.
func reflow(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		last := len(out) - 1
		if line != "" && !strings.HasPrefix(line, " ") && last >= 0 && out[last] != "" && !strings.HasPrefix(out[last], " ") {
			out[last] += " " + line
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

var thLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\.TH MAILFS 1 "([^"]*)" .*$`) })

// manHeading makes the .TH line: name, section, date, source (the
// version), and the manual's title, where mango puts the summary.
func manHeading(page, version string) string {
	version = strings.ReplaceAll(strings.Fields(version + " mailfs")[0], `"`, "")
	return thLine().ReplaceAllString(page, `.TH MAILFS 1 "$1" "mailfs `+version+`" "mailfs manual"`)
}

// manParagraphs mends the paragraphs mango's roff writer makes: it starts
// one (.PP) at every line it is given, and gives the first command or flag
// of a list no tag of its own (.TP). Here every entry of a list is tagged;
// in an entry, the help follows its name at once and each further
// paragraph is an indented one (.IP), so the help stays under the name; a
// run of indented lines (a table, an example) is one block kept as typed
// (.nf), not a paragraph per line; empty paragraphs go.
func manParagraphs(page string) string {
	lines := strings.Split(page, "\n")
	var out []string
	inEntry := false // after an entry's tag, before the next request that ends it
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		prev := ""
		if len(out) > 0 {
			prev = out[len(out)-1]
		}
		switch {
		case strings.HasPrefix(line, `\fB`) && strings.HasPrefix(prev, ".RS"):
			out = append(out, ".TP") // the list's first entry
			inEntry = true
		case line == ".TP":
			inEntry = true
		case strings.HasPrefix(line, ".RS"), strings.HasPrefix(line, ".RE"), strings.HasPrefix(line, ".SH"):
			inEntry = false
		}
		if line != ".PP" {
			out = append(out, line)
			continue
		}
		for i+1 < len(lines) && lines[i+1] == ".PP" {
			i++ // an empty paragraph
		}
		para := ".PP"
		switch {
		case inEntry && strings.HasPrefix(prev, `\fB`) && len(out) > 1 && out[len(out)-2] == ".TP":
			para = "" // the entry's first paragraph follows its tag
		case inEntry:
			para = ".IP"
		}
		if para != "" {
			out = append(out, para)
		}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], " ") {
			out = append(out, ".nf")
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], " ") {
				out = append(out, lines[i+1])
				i++
				if i+2 < len(lines) && lines[i+1] == ".PP" && strings.HasPrefix(lines[i+2], " ") {
					i++ // the next line of the same block
				}
			}
			out = append(out, ".fi")
		}
	}
	return strings.Join(out, "\n")
}
