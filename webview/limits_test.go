package webview_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveLimited serves tw's server on loopback with short limits, as
// mailfs serve does with its defaults, and returns its address.
func serveLimited(t *testing.T, tw *town) string {
	t.Helper()
	tw.srv.ReadTimeout, tw.srv.WriteTimeout, tw.srv.IdleTimeout = 300*time.Millisecond, time.Second, 300*time.Millisecond
	tw.srv.Loopback = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tw.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// cutWhileDripping writes req, then drips one byte at a time for far
// longer than the server's limits, and reports whether the server closed
// the connection before the client was done.
func cutWhileDripping(t *testing.T, addr, req string) bool {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c) // returns when the server closes
		close(closed)
	}()
	for range 200 { // 20 s of dripping, 60 times the read limit
		select {
		case <-closed:
			return true
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := c.Write([]byte("x")); err != nil {
			return true
		}
	}
	return false
}

// Clients a browser would not be are cut: a POST body dripped a byte at
// a time, a kept-alive connection left idle, and the same from a client
// with no token on a server that needs one — each closed while the
// client still held on.
func TestSlowClientsAreCut(t *testing.T) {
	tw := newTown(t, "human", "")
	addr := serveLimited(t, tw)
	if !cutWhileDripping(t, addr, "POST /send HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10000\r\n\r\n") {
		t.Error("a dripped POST body was never cut")
	}
	if !cutWhileDripping(t, addr, "GET / HTTP/1.1\r\nHost: "+addr+"\r\nX-Slow: ") {
		t.Error("dripped headers were never cut")
	}
	// Idle after one request on a kept-alive connection.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /static/style.css HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("an idle kept-alive connection stayed open: %v", err)
	}

	locked := newTown(t, "human", "a-token-of-sixteen-chars")
	addr = serveLimited(t, locked)
	if !cutWhileDripping(t, addr, "POST /send HTTP/1.1\r\nHost: "+addr+"\r\nContent-Length: 10000\r\n\r\n") {
		t.Error("a slow client without the token was never cut")
	}
}

// Live feeds past the cap are answered 503 with a Retry-After; one that
// closes frees its place.
func TestLiveFeedsAreCapped(t *testing.T) {
	tw := newTown(t, "", "")
	tw.srv.MaxStreams = 2
	open := func() *http.Response {
		t.Helper()
		resp, err := http.Get(tw.ts.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	a, b := open(), open()
	defer a.Body.Close()
	if a.StatusCode != 200 || b.StatusCode != 200 {
		t.Fatalf("the first two feeds: %d %d", a.StatusCode, b.StatusCode)
	}
	third := open()
	third.Body.Close()
	if third.StatusCode != http.StatusServiceUnavailable || third.Header.Get("Retry-After") == "" {
		t.Fatalf("a third feed past the cap of 2: %d, Retry-After %q", third.StatusCode, third.Header.Get("Retry-After"))
	}
	b.Body.Close()
	for i := 0; ; i++ { // the server sees b's close at its next write, or its context
		r := open()
		r.Body.Close()
		if r.StatusCode == 200 {
			break
		}
		if i == 200 {
			t.Fatal("a closed feed never freed its place")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
