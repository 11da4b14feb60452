package maildir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mailfs/mailfs/internal/jsonobj"
	"slices"
	"strings"
)

// A field is one member of a message file's top-level object, with its
// value exactly as the file spelt it. Rewrites work on fields, so every value
// mailfs does not change keeps its bytes.
type field = jsonobj.Member

// parseObject splits data, which must be exactly one JSON object, into its
// members in file order (see [jsonobj.Members]).
func parseObject(data []byte) ([]field, error) { return jsonobj.Members(data) }

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
		b = jsonobj.AppendString(b, f.Key)
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
		b = jsonobj.AppendString(b, f.Key)
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
