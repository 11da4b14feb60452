package webview

import "testing"

// After an action the browser goes back only to a path on this server:
// nothing a browser could read as another host, tabs and newlines
// included (browsers drop them, so "/\t/host" is "//host" to them).
func TestLocalPath(t *testing.T) {
	for to, want := range map[string]bool{
		"/box/toast": true, "/msg/toast/2026-01-01T00-00-00Z-x?x=1": true, "/": true,
		"//evil.example": false, "/\t/evil.example": false, "/\n/evil.example": false, "/ /evil": false,
		"/\\evil.example": false, "https://evil.example/": false, "evil": false, "": false,
		"/\u00a0/evil": false, "/%2f/evil": false, // strict: a path that decodes to "//" is refused too
	} {
		if got := localPath(to); got != want {
			t.Errorf("localPath(%q) = %v, want %v", to, got, want)
		}
	}
}
