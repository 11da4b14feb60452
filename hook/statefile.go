package hook

import (
	"strconv"
	"time"

	"github.com/mailfs/mailfs/internal/jsonobj"
)

// The state file is read and written by hand, not by encoding/json: a
// hook is a process started for one call, and encoding/json's first
// reflective decode alone took 0.1 ms of a 2.4 ms prompt hook. The file
// is the same JSON object encoding/json wrote (and reads it):
// TestStateFileReadsAsEncodingJSONDoes holds both directions.

// decodeState reads a state file: false for anything but a JSON object
// whose known keys hold values of their types (null is the zero value);
// keys it does not know, a later mailfs's, are left alone.
func decodeState(data []byte) (state, bool) {
	ms, err := jsonobj.Members(data)
	if err != nil {
		return state{}, false
	}
	var st state
	for _, m := range ms {
		ok := true
		if string(m.Raw) == "null" {
			continue
		}
		switch m.Key {
		case "root":
			st.Root, ok = stringValue(m.Raw)
		case "last_seen":
			st.LastSeen, ok = timeValue(m.Raw)
		case "last_event":
			var s string
			s, ok = stringValue(m.Raw)
			st.LastEvent = Event(s)
		case "last_post_tool":
			st.LastPostTool, ok = timeValue(m.Raw)
		case "stop_blocks":
			var err error
			st.StopBlocks, err = strconv.Atoi(string(m.Raw))
			ok = err == nil
		case "stop_blocked":
			st.StopBlocked, ok = jsonobj.Strings(m.Raw)
		case "turn_shown":
			st.TurnShown, ok = jsonobj.Strings(m.Raw)
		case "reminded":
			st.Reminded, ok = jsonobj.Strings(m.Raw)
		case "last_mcp":
			st.LastMCP, ok = timeValue(m.Raw)
		case "last_mcp_tool":
			st.LastMCPTool, ok = stringValue(m.Raw)
		}
		if !ok {
			return state{}, false
		}
	}
	return st, true
}

func stringValue(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	s, err := jsonobj.String(raw)
	return s, err == nil
}

func timeValue(raw []byte) (time.Time, bool) {
	var t time.Time
	return t, t.UnmarshalJSON(raw) == nil
}

// encodeState writes st as encoding/json would (its keys in the struct's
// order, the same omissions), but for HTML escaping, which it leaves out.
func encodeState(st state) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"root":`...)
	b = jsonobj.AppendString(b, st.Root)
	b = append(b, `,"last_seen":`...)
	b = appendTime(b, st.LastSeen)
	b = append(b, `,"last_event":`...)
	b = jsonobj.AppendString(b, string(st.LastEvent))
	b = append(b, `,"last_post_tool":`...)
	b = appendTime(b, st.LastPostTool)
	b = append(b, `,"stop_blocks":`...)
	b = strconv.AppendInt(b, int64(st.StopBlocks), 10)
	b = append(b, `,"stop_blocked":`...)
	b = appendStrings(b, st.StopBlocked)
	if len(st.TurnShown) > 0 {
		b = append(b, `,"turn_shown":`...)
		b = appendStrings(b, st.TurnShown)
	}
	if len(st.Reminded) > 0 {
		b = append(b, `,"reminded":`...)
		b = appendStrings(b, st.Reminded)
	}
	if !st.LastMCP.IsZero() {
		b = append(b, `,"last_mcp":`...)
		b = appendTime(b, st.LastMCP)
	}
	if st.LastMCPTool != "" {
		b = append(b, `,"last_mcp_tool":`...)
		b = jsonobj.AppendString(b, st.LastMCPTool)
	}
	return append(b, '}')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonobj.AppendString(b, s)
	}
	return append(b, ']')
}
