// Command floor is the per-process floor for BenchmarkCLI: a minimal Go
// program that makes the system calls a mailfs command makes, and nothing
// else. It is built the same way as mailfs (CGO_ENABLED=0).
//
//	floor send ROOT AGENT ID   durable write of a message: temp, write, fsync, no-replace rename, fsync dir
//	floor inbox ROOT AGENT     list the mailbox: read and decode each file, print the unread
//	floor read ROOT AGENT ID   read a message, print it, rewrite it with "read": true, durably
//	floor check ROOT AGENT     read and decode the mailbox and list the nudge queue; nothing to say: no output
//
// Built with -tags kong (kong.go), it links kong, and "kong CALL... --"
// before any of these first has kong parse CALL, a mailfs command line
// (hook, check, inbox or send), with a grammar of the shape kong is given
// for it: the floor of a program that parses its command line with kong.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"golang.org/x/sys/unix"
)

func main() {
	args := os.Args[1:]
	if args[0] == "kong" {
		end := slices.Index(args, "--")
		parseWithKong(args[1:end])
		args = args[end+1:]
	}
	root, agent := args[1], args[2]
	box := filepath.Join(root, "state", "mail", agent)
	switch args[0] {
	case "send":
		id := args[3]
		data, _ := json.Marshal(map[string]any{"from": "mayor", "to": agent, "subject": "hi", "body": "there", "read": false})
		write(box, id+".json", data, false)
		fmt.Println(id)
	case "inbox":
		for _, m := range list(box) {
			if m["read"] != true {
				fmt.Printf("%s  %s  %s\n", m["id"], m["from"], m["subject"])
			}
		}
	case "read":
		name := args[3] + ".json"
		data, err := os.ReadFile(filepath.Join(box, name))
		must(err)
		var m map[string]any
		must(json.Unmarshal(data, &m))
		fmt.Printf("From: %s\nSubject: %s\n\n%s\n", m["from"], m["subject"], m["body"])
		m["read"] = true
		data, _ = json.MarshalIndent(m, "", "  ")
		write(box, name, data, true)
	case "check":
		unread := 0
		for _, m := range list(box) {
			if m["read"] != true {
				unread++
			}
		}
		nudges, _ := os.ReadDir(filepath.Join(root, "runtime", "nudge", agent))
		if unread > 0 || len(nudges) > 0 { // with nothing to say, a hook prints nothing
			fmt.Println(unread, len(nudges))
		}
	}
}

func list(box string) []map[string]any {
	entries, err := os.ReadDir(box)
	must(err)
	var msgs []map[string]any
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" || !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(box, e.Name()))
		must(err)
		var m map[string]any
		must(json.Unmarshal(data, &m))
		m["id"] = e.Name()
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool { return msgs[i]["id"].(string) < msgs[j]["id"].(string) })
	return msgs
}

func write(dir, name string, data []byte, replace bool) {
	must(os.MkdirAll(dir, 0o700))
	tmp := filepath.Join(dir, ".floor-"+name)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	must(err)
	_, err = f.Write(data)
	must(err)
	must(f.Sync())
	must(f.Close())
	if replace {
		must(os.Rename(tmp, filepath.Join(dir, name)))
	} else {
		must(unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, filepath.Join(dir, name), unix.RENAME_NOREPLACE))
	}
	d, err := os.Open(dir)
	must(err)
	must(d.Sync())
	must(d.Close())
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
}
