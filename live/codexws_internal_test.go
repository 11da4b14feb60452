package live

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/textproto"
	"testing"
)

// serverFrame writes one unmasked frame, as a server sends.
func serverFrame(w io.Writer, fin bool, op byte, p []byte) {
	b := op
	if fin {
		b |= 0x80
	}
	hdr := []byte{b}
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, byte(n))
	case n < 1<<16:
		hdr = append(hdr, 126, byte(n>>8), byte(n))
	default:
		hdr = binary.BigEndian.AppendUint64(append(hdr, 127), uint64(n))
	}
	w.Write(append(hdr, p...))
}

// readClientFrame reads one masked frame, as a client sends.
func readClientFrame(t *testing.T, r *bufio.Reader) (byte, []byte) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Errorf("server: %v", err)
		return 0, nil
	}
	if h[1]&0x80 == 0 {
		t.Errorf("a client frame unmasked")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(r, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(r, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	var mask [4]byte
	io.ReadFull(r, mask[:])
	p := make([]byte, n)
	io.ReadFull(r, p)
	for i := range p {
		p[i] ^= mask[i%4]
	}
	return h[0] & 0x0f, p
}

// The WebSocket client against a server written from RFC 6455: the
// handshake's accept key checked, messages each way at every length
// form, a fragmented message joined, a ping answered with its pong.
func TestWebSocketClient(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	big := bytes.Repeat([]byte("x"), 70000)
	mid := bytes.Repeat([]byte("y"), 300)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		r := bufio.NewReader(server)
		tp := textproto.NewReader(r)
		if line, _ := tp.ReadLine(); line != "GET / HTTP/1.1" {
			t.Errorf("request line %q", line)
		}
		h, _ := tp.ReadMIMEHeader()
		sum := sha1.Sum([]byte(h.Get("Sec-WebSocket-Key") + wsGUID))
		io.WriteString(server, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(sum[:])+"\r\n\r\n")
		for _, want := range [][]byte{[]byte("small"), mid, big} {
			if op, p := readClientFrame(t, r); op != 1 || !bytes.Equal(p, want) {
				t.Errorf("server read op %d, %d bytes; want a text of %d", op, len(p), len(want))
			}
		}
		serverFrame(server, true, 0x9, []byte("ping!"))
		if op, p := readClientFrame(t, r); op != 0xA || string(p) != "ping!" {
			t.Errorf("the ping's answer: op %d %q", op, p)
		}
		serverFrame(server, false, 0x1, []byte("hel"))
		serverFrame(server, true, 0x0, []byte("lo"))
		serverFrame(server, true, 0x1, big)
	}()
	w, err := wsHandshake(client, "localhost", "/")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, p := range [][]byte{[]byte("small"), mid, big} {
			if err := w.WriteText(p); err != nil {
				t.Error(err)
			}
		}
	}()
	if got, err := w.ReadMessage(); err != nil || string(got) != "hello" {
		t.Fatalf("the fragmented message: %q %v", got, err)
	}
	if got, err := w.ReadMessage(); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the long message: %d bytes, %v", len(got), err)
	}
	<-done
}

// A server that answers the handshake with the wrong key is refused.
func TestWebSocketClientChecksTheAcceptKey(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		tp := textproto.NewReader(bufio.NewReader(server))
		tp.ReadLine()
		tp.ReadMIMEHeader()
		io.WriteString(server, "HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: wrong\r\n\r\n")
	}()
	if _, err := wsHandshake(client, "localhost", "/"); err == nil {
		t.Fatal("a wrong accept key was taken")
	}
}
