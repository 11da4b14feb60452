package maildir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// A field is one member of a message file's top-level object, with its
// value exactly as the file spelt it. Rewrites work on fields, so every value
// mailfs does not change keeps its bytes.
type field struct {
	key string
	raw []byte
}

// parseObject splits data, which must be exactly one JSON object, into its
// members in file order. It refuses invalid UTF-8, invalid JSON, trailing
// data, anything but an object at the top, and duplicate keys.
func parseObject(data []byte) ([]field, error) {
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
	fields := make([]field, 0, 12)
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
		key, err := unquote(data[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the ':'
		end = endOfValue(data, i)
		if seen == nil && len(fields) == scanKeys {
			seen = make(map[string]struct{}, 2*scanKeys)
			for _, f := range fields {
				seen[f.key] = struct{}{}
			}
		}
		dup := false
		if seen != nil {
			_, dup = seen[key]
			seen[key] = struct{}{}
		} else {
			dup = slices.ContainsFunc(fields, func(f field) bool { return f.key == key })
		}
		if dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		fields = append(fields, field{key: key, raw: data[i:end]})
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

// unquote decodes a JSON string literal.
func unquote(raw []byte) (string, error) {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// encodeObject renders fields as mailfs writes every file: keys sorted,
// two-space indent, values as given, a final newline.
func encodeObject(fields []field) []byte {
	fields = slices.Clone(fields)
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	n := 4
	for _, f := range fields {
		n += len(f.key) + len(f.raw) + 8
	}
	b := make([]byte, 0, n)
	if len(fields) == 0 {
		return append(b, "{}\n"...)
	}
	b = append(b, "{\n"...)
	for i, f := range fields {
		b = append(b, "  "...)
		b = appendString(b, f.key)
		b = append(b, ": "...)
		b = append(b, f.raw...)
		if i < len(fields)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// encodeFitting renders fields as encodeObject does, or, when that would
// pass [MaxSize] (a script's compact file near the limit, re-indented),
// compact on one line: an edit never makes a message unreadable. Fields
// that do not fit even so are [ErrTooLarge], and nothing is written.
func encodeFitting(fields []field) ([]byte, error) {
	if b := encodeObject(fields); len(b) <= MaxSize {
		return b, nil
	}
	b := append(compactObject(nil, fields), '\n')
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%w: the edited file would be %d bytes, the limit is %d", ErrTooLarge, len(b), MaxSize)
	}
	return b, nil
}

// compactObject renders fields on one line, keys sorted, for --json output.
func compactObject(b []byte, fields []field) []byte {
	fields = slices.Clone(fields)
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.key)
		b = append(b, ':')
		if bytes.ContainsAny(f.raw, " \t\r\n") {
			var buf bytes.Buffer
			if json.Compact(&buf, f.raw) == nil {
				b = append(b, buf.Bytes()...)
				continue
			}
		}
		b = append(b, f.raw...)
	}
	return append(b, '}')
}

// marshalValue encodes v as it sits in a two-space-indented file at depth
// one, without HTML escaping ("<" stays "<").
func marshalValue(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err) // only strings, bools and string slices reach here
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// appendString appends s as a JSON string without HTML escaping.
func appendString(b []byte, s string) []byte {
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
	return append(b, marshalValue(s)...)
}

// setField returns fields with key set to raw, appended if it was absent.
func setField(fields []field, key string, raw []byte) []field {
	out := slices.Clone(fields)
	for i := range out {
		if out[i].key == key {
			out[i].raw = raw
			return out
		}
	}
	return append(out, field{key: key, raw: raw})
}
