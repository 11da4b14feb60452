package maildir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// A field is one member of a message file's top-level object, with its
// value exactly as the file spelt it. Rewrites work on fields, so every value
// mailfs does not change keeps its bytes.
type field struct {
	Key string
	Raw json.RawMessage
}

// parseObject splits data, which must be exactly one JSON object, into its
// members in file order. It refuses invalid UTF-8 (which encoding/json
// would turn into U+FFFD), anything but one object, and duplicate keys
// (which encoding/json would let the last win).
func parseObject(data []byte) ([]field, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if json.Valid(data) {
			return nil, errors.New("not a JSON object")
		}
		return nil, jsonError(data)
	}
	fields := make([]field, 0, 12)
	var seen map[string]bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(data)
		}
		f := field{Key: tok.(string)}
		if err := dec.Decode(&f.Raw); err != nil {
			return nil, jsonError(data)
		}
		if seen == nil {
			seen = make(map[string]bool, 12)
		}
		if seen[f.Key] {
			return nil, fmt.Errorf("duplicate key %q", f.Key)
		}
		seen[f.Key] = true
		fields = append(fields, f)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, jsonError(data)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, jsonError(data)
	}
	return fields, nil
}

// jsonError says why data is not JSON, as json.Unmarshal says it.
func jsonError(data []byte) error {
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return errors.New("invalid JSON")
}

// decodeString decodes a JSON string; anything else is an error.
func decodeString(raw []byte) (string, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' {
		return "", errors.New("not a string")
	}
	err := json.Unmarshal(raw, &s)
	return s, err
}

// decodeStrings decodes a JSON array of strings; ok is false for anything
// else, null elements included.
func decodeStrings(raw []byte) ([]string, bool) {
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, false
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		s, err := decodeString(e)
		if err != nil {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(b []byte, s string) []byte { return append(b, marshalValue(s)...) }

// encodeObject renders fields as mailfs writes every file: keys sorted,
// two-space indent, values as given, a final newline.
func encodeObject(fields []field) []byte {
	fields = slices.Clone(fields)
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.Key, b.Key) })
	n := 4
	for _, f := range fields {
		n += len(f.Key) + len(f.Raw) + 8
	}
	b := make([]byte, 0, n)
	if len(fields) == 0 {
		return append(b, "{}\n"...)
	}
	b = append(b, "{\n"...)
	for i, f := range fields {
		b = append(b, "  "...)
		b = appendString(b, f.Key)
		b = append(b, ": "...)
		b = append(b, f.Raw...)
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
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.Key, b.Key) })
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Key)
		b = append(b, ':')
		if bytes.ContainsAny(f.Raw, " \t\r\n") {
			var buf bytes.Buffer
			if json.Compact(&buf, f.Raw) == nil {
				b = append(b, buf.Bytes()...)
				continue
			}
		}
		b = append(b, f.Raw...)
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

// setField returns fields with key set to raw, appended if it was absent.
func setField(fields []field, key string, raw []byte) []field {
	out := slices.Clone(fields)
	for i := range out {
		if out[i].Key == key {
			out[i].Raw = raw
			return out
		}
	}
	return append(out, field{Key: key, Raw: raw})
}
