package gitsync

import "testing"

// homesVersion: the remote's file is the home's version of a message this
// host holds as sent only when nothing but "read" and "claim" differ, and
// this host's file is as sent; anything else is another message that took
// the same name (settle renames it), or a version no home made.
func TestHomesVersion(t *testing.T) {
	const sent = `{"body":"done","from":"p3","meta":{"a":"1"},"read":false,"subject":"POLECAT_DONE w-1","to":"witness"}`
	for _, c := range []struct {
		name         string
		ours, theirs string
		want         bool
	}{
		{"marked read by its home", sent, `{"body":"done","from":"p3","meta":{"a":"1"},"read":true,"subject":"POLECAT_DONE w-1","to":"witness"}`, true},
		{"rewritten in the other layout", sent, "{\n  \"body\": \"done\",\n  \"from\": \"p3\",\n  \"meta\": {\n    \"a\": \"1\"\n  },\n  \"read\": true,\n  \"subject\": \"POLECAT_DONE w-1\",\n  \"to\": \"witness\"\n}\n", true},
		{"claimed by its home", sent, `{"body":"done","claim":{"agent":"p1"},"from":"p3","meta":{"a":"1"},"read":false,"subject":"POLECAT_DONE w-1","to":"witness"}`, true},
		{"sent with no read key", `{"body":"done","from":"p3","subject":"s"}`, `{"body":"done","from":"p3","read":true,"subject":"s"}`, true},
		{"another message of the same name", sent, `{"body":"other","from":"p3","meta":{"a":"1"},"read":true,"subject":"POLECAT_DONE w-1","to":"witness"}`, false},
		{"a key the home never changes", sent, `{"body":"done","from":"p3","meta":{"a":"2"},"read":true,"subject":"POLECAT_DONE w-1","to":"witness"}`, false},
		{"this host's is read: not as sent", `{"body":"done","read":true}`, `{"body":"done","read":false}`, false},
		{"this host's is claimed: not as sent", `{"body":"done","claim":{"agent":"p1"}}`, `{"body":"done"}`, false},
		{"not a message here", `not json`, `{"read":true}`, false},
		{"not a message there", sent, `{"read":true} {}`, false},
		{"numbers kept exact", `{"n":12345678901234567890}`, `{"n":12345678901234567891,"read":true}`, false},
	} {
		if got := homesVersion([]byte(c.ours), []byte(c.theirs)); got != c.want {
			t.Errorf("%s: homesVersion = %v, want %v", c.name, got, c.want)
		}
	}
}
