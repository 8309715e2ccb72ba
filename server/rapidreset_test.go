package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// heldClock holds every wait until open is closed (or the wait's
// context ends), and counts the waits that began: the requests in a
// delay at once.
type heldClock struct {
	began atomic.Int64
	open  chan struct{}
}

func (c *heldClock) Now() time.Time { return time.Now() }

func (c *heldClock) Wait(ctx context.Context, d time.Duration) bool {
	c.began.Add(1)
	select {
	case <-c.open:
		return true
	case <-ctx.Done():
		return false
	}
}

// TestHTTP2RapidReset: HTTP/2 rapid reset (CVE-2023-44487) against the
// server as --tls-self-signed serves it, aimed where a mock is weakest:
// an idempotent route with a delay that goes on when its client leaves
// (onClientAbort: complete), so that every stream the attacker opens
// and resets at once leaves a request running. The requests running at
// once stay within the MAX_CONCURRENT_STREAMS the server advertised,
// the server ends the attacking connection (GOAWAY ENHANCE_YOUR_CALM)
// long before the attacker has sent its streams, and another client is
// answered meanwhile (issue 19, Also).
func TestHTTP2RapidReset(t *testing.T) {
	clock := &heldClock{open: make(chan struct{})}
	base, client, _ := serveTLS(t, Options{Clock: clock}, `
routes:
  - name: pay
    method: POST
    path: /pay
    idempotency: { key: header.Idempotency-Key, onClientAbort: complete }
    respond: { status: 201, delay: 10s, body: '{"id":"pay_1"}' }
  - { name: ok, path: /ok, respond: { status: 200, body: fine } }
`)
	defer close(clock.open) // before serveTLS's cleanup shuts down
	host := strings.TrimPrefix(base, "https://")
	roots := client.Transport.(*http.Transport).TLSClientConfig.RootCAs
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// The server's SETTINGS come first: its MAX_CONCURRENT_STREAMS.
	maxStreams := uint32(0)
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %v, want SETTINGS", f)
	}
	if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); ok {
		maxStreams = v
	}
	if maxStreams == 0 || maxStreams > 1000 {
		t.Fatalf("server advertises MAX_CONCURRENT_STREAMS %d, want a bound", maxStreams)
	}
	if err := fr.WriteSettingsAck(); err != nil {
		t.Fatal(err)
	}

	// The reader: until the server ends the connection, note a GOAWAY.
	goaway := make(chan http2.ErrCode, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if g, ok := f.(*http2.GoAwayFrame); ok {
				select {
				case goaway <- g.ErrCode:
				default:
				}
			}
		}
	}()

	const attempts = 20_000 // HEADERS then RST_STREAM, each
	var hb strings.Builder
	enc := hpack.NewEncoder(&hb)
	sent := 0
	var werr error
	for i := range attempts {
		hb.Reset()
		for _, h := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", host}, {":path", "/pay"}, {"idempotency-key", fmt.Sprint("k", i)}} {
			_ = enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
		}
		id := uint32(2*i + 1)
		werr = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte(hb.String()), EndStream: true, EndHeaders: true})
		if werr == nil {
			werr = fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if werr != nil {
			break
		}
		sent++
	}
	select {
	case <-readDone:
	case <-time.After(patience):
		t.Fatalf("the server kept the attacking connection open after %d streams opened and reset (write error %v)", sent, werr)
	}
	select {
	case code := <-goaway:
		if code != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
		}
	default:
		t.Errorf("the connection ended without a GOAWAY after %d streams", sent)
	}
	if n := clock.began.Load(); n > int64(maxStreams) {
		t.Errorf("%d requests in their delay at once, past MAX_CONCURRENT_STREAMS %d", n, maxStreams)
	}
	// Another client is served meanwhile.
	r, err := client.Get(base + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || string(body) != "fine" {
		t.Errorf("GET /ok during the attack: %d %s", r.StatusCode, body)
	}
	t.Logf("%d streams sent before the server ended the connection; %d requests ran (bound %d)", sent, clock.began.Load(), maxStreams)
}
