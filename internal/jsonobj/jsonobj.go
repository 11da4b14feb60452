// Package jsonobj reads the members of one JSON object, each value kept
// as the file spelt it, and its strings and arrays of strings, without
// encoding/json's reflection: the message files, group files and the
// hooks' state are read by a process that starts for one call, where
// encoding/json's first reflective decode alone costs 0.1 ms. Validity is
// still encoding/json's (json.Valid), so what it accepts is JSON.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// A Member is one member of an object, with its value exactly as the
// data spelt it.
type Member struct {
	Key string
	Raw []byte
}

// Members splits data, which must be exactly one JSON object, into its
// members in file order. It refuses invalid UTF-8, invalid JSON, trailing
// data, anything but an object at the top, and duplicate keys.
func Members(data []byte) ([]Member, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	if !json.Valid(data) {
		var v json.RawMessage
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return nil, errors.New("invalid JSON")
	}
	// data is valid JSON from here on, so the scan can trust its structure.
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	i = skipSpace(data, i+1)
	fields := make([]Member, 0, 12)
	if data[i] == '}' {
		return fields, nil
	}
	// Duplicate keys are found by a scan while there are few (a message
	// has a dozen), then by a set, so that a file of many keys costs time
	// linear in its size, not quadratic.
	const scanKeys = 32
	var seen map[string]struct{}
	for {
		end := endOfString(data, i)
		key, err := String(data[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the ':'
		end = endOfValue(data, i)
		if seen == nil && len(fields) == scanKeys {
			seen = make(map[string]struct{}, 2*scanKeys)
			for _, f := range fields {
				seen[f.Key] = struct{}{}
			}
		}
		dup := false
		if seen != nil {
			_, dup = seen[key]
			seen[key] = struct{}{}
		} else {
			dup = slices.ContainsFunc(fields, func(f Member) bool { return f.Key == key })
		}
		if dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		fields = append(fields, Member{Key: key, Raw: data[i:end]})
		i = skipSpace(data, end)
		if data[i] == '}' {
			return fields, nil
		}
		i = skipSpace(data, i+1) // the ','
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// endOfString returns the index just past the string that starts at i.
func endOfString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// endOfValue returns the index just past the value that starts at i.
func endOfValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return endOfString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = endOfString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	default: // number, true, false, null
		j := i
		for j < len(data) && !strings.ContainsRune(",}] \t\r\n", rune(data[j])) {
			j++
		}
		return j
	}
}

// String decodes a JSON string literal.
func String(raw []byte) (string, error) {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// Strings decodes a JSON array of strings; ok is false for anything
// else, including an array holding another type. raw comes from a file
// that json.Valid accepted, so a scan of its elements can trust the syntax.
func Strings(raw []byte) (out []string, ok bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	out = []string{}
	for i := skipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		if raw[i] != '"' {
			return nil, false
		}
		end := endOfString(raw, i)
		s, err := String(raw[i:end])
		if err != nil {
			return nil, false
		}
		out = append(out, s)
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out, true
}

// AppendString appends s as a JSON string, without HTML escaping ("<"
// stays "<").
func AppendString(b []byte, s string) []byte {
	safe := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			safe = false
			break
		}
	}
	if safe {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
