package server

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestFaultShapeSchedules checks, on a clock that records its waits and
// waits none, what each shaping fault waits and when: bandwidth in
// tenth-of-a-second pieces at its rate (and the request body taken as
// slowly), latency before the first byte or before the body, with its
// jitter drawn from the seed, slice in pieces of its size, gap apart.
// The client gets the whole answer every time.
func TestFaultShapeSchedules(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 250) // 2,500 bytes
	yaml := `
routes:
  - { path: /bw, respond: { body: "` + body + `", fault: { kind: bandwidth, rate: 1000 } } }
  - { method: POST, path: /up, respond: { body: ok, fault: { kind: bandwidth, rate: 1000 } } }
  - { path: /first, respond: { body: "` + body + `", fault: { kind: latency, latency: 2s } } }
  - { path: /whole, respond: { body: "` + body + `", fault: { kind: latency, latency: 3s, on: whole } } }
  - { path: /jitter, respond: { body: x, fault: { kind: latency, latency: 1s, jitter: 500ms } } }
  - { path: /slice, respond: { body: "` + body[:25] + `", fault: { kind: slice, size: 10, gap: 40ms } } }
`
	cases := []struct {
		method, path, body string
		want               string // the waits, in order
		answer             string
	}{
		{"GET", "/bw", "", strings.TrimSpace(strings.Repeat("100ms ", 25)), body},
		{"POST", "/up", strings.Repeat("u", 500), "500ms 100ms", "ok"}, // the upload, then the 2-byte body's one piece
		{"GET", "/first", "", "2s", body},
		{"GET", "/whole", "", "3s", body},
		{"GET", "/slice", "", "40ms 40ms", body[:25]}, // three pieces: 10, 10, 5
	}
	for _, tc := range cases {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			t.Parallel()
			clock := &testClock{scale: 0}
			_, hs, logs := serveYAML(t, Options{Clock: clock}, yaml)
			got := do(t, tc.method, hs.URL+tc.path, tc.body)
			if got.status != 200 || got.body != tc.answer {
				t.Fatalf("%d %q, want 200 and the whole answer", got.status, got.body)
			}
			waits, _ := clock.recorded()
			if s := strings.Trim(fmt.Sprint(waits), "[]"); s != tc.want {
				t.Errorf("waits %s, want %s", s, tc.want)
			}
			eventually(t, patience, func() string {
				lines := logLines(logs, tc.path)
				if len(lines) != 1 || lines[0]["fault_after"] != "processing" || lines[0]["status"] != float64(200) {
					return fmt.Sprintf("log lines %v, want one with the fault after processing and status 200", lines)
				}
				return ""
			})
		})
	}
	t.Run("jitter", func(t *testing.T) {
		t.Parallel()
		run := func(seed uint64) []time.Duration {
			clock := &testClock{scale: 0}
			_, hs, _ := serveYAML(t, Options{Clock: clock, Rand: SeededRand(seed)}, yaml)
			for range 20 {
				if got := do(t, "GET", hs.URL+"/jitter", ""); got.body != "x" {
					t.Fatalf("/jitter: %d %q", got.status, got.body)
				}
			}
			waits, _ := clock.recorded()
			return waits
		}
		a := run(3)
		distinct := map[time.Duration]bool{}
		for _, w := range a {
			if w < 500*time.Millisecond || w > 1500*time.Millisecond {
				t.Errorf("wait %s outside 1s ± 500ms", w)
			}
			distinct[w] = true
		}
		if len(a) != 20 || len(distinct) < 10 {
			t.Errorf("waits %v: want 20, drawn (not all alike)", a)
		}
		if b := run(3); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("seed 3 twice drew %v and %v", a, b)
		}
		if c := run(4); fmt.Sprint(a) == fmt.Sprint(c) {
			t.Errorf("seeds 3 and 4 drew the same waits %v", a)
		}
	})
}

// TestFaultShapesOnTheWire sends shaped answers to a real client on the
// real clock: a bandwidth-limited and a sliced body arrive in pieces and
// no sooner than their pace allows, a latency on the whole answer sends
// the head first and the body after it. Only lower bounds on time are
// checked: a loaded machine can only make things later.
func TestFaultShapesOnTheWire(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("abcdefghij", 4) // 40 bytes: one client read could hold it all
	_, hs, _ := serveYAML(t, Options{}, `
routes:
  - { path: /bw, respond: { body: "`+body+`", fault: { kind: bandwidth, rate: 40 } } }
  - { path: /slice, respond: { body: "`+body+`", fault: { kind: slice, size: 8, gap: 150ms } } }
  - { path: /whole, respond: { body: "`+body+`", fault: { kind: latency, latency: 800ms, on: whole } } }
  - { path: /first, respond: { body: "`+body+`", fault: { kind: latency, latency: 800ms } } }
`)
	for _, tc := range []struct {
		path      string
		minReads  int
		atLeast   time.Duration // from the request to the last byte
		headFirst time.Duration // from the head to the last byte; 0 for no check
	}{
		{"/bw", 2, 900 * time.Millisecond, 0},        // 10 pieces of 4 bytes, 100ms apart
		{"/slice", 2, 4 * 150 * time.Millisecond, 0}, // 5 pieces of 8 bytes, 150ms apart
		{"/whole", 1, 800 * time.Millisecond, 750 * time.Millisecond},
		{"/first", 1, 800 * time.Millisecond, 0},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			t.Parallel()
			ex := fresh("GET", hs.URL+tc.path, "", 0)
			if ex.err != nil || ex.resp.StatusCode != 200 || string(ex.body) != body {
				t.Fatalf("%+v body %q, want 200 and the whole body", ex, ex.body)
			}
			if len(ex.reads) < tc.minReads {
				t.Errorf("the body came in %d read(s), want at least %d (in pieces)", len(ex.reads), tc.minReads)
			}
			last := ex.reads[len(ex.reads)-1]
			if took := last.Sub(ex.start); took < tc.atLeast {
				t.Errorf("the body took %s, want at least %s", took, tc.atLeast)
			}
			if tc.headFirst > 0 {
				if gap := last.Sub(ex.head); gap < tc.headFirst {
					t.Errorf("the body came %s after the head, want at least %s (the head first)", gap, tc.headFirst)
				}
			}
		})
	}
}

// TestFaultLimit reads the raw bytes of answers cut by limit: exactly
// bytes: of the answer as written, headers counted, then the connection
// closes; a limit past the end sends the whole answer and closes.
func TestFaultLimit(t *testing.T) {
	t.Parallel()
	_, hs, logs := serveYAML(t, Options{}, `
routes:
  - { path: /head, respond: { body: hello, fault: { kind: limit, bytes: 20 } } }
  - { path: /all, respond: { body: hello, fault: { kind: limit, bytes: 100000 } } }
  - { path: /tiny, respond: { body: hello, fault: { kind: limit, bytes: 4 } } }
`)
	raw := func(path string) string {
		conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(patience))
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
		b, err := io.ReadAll(conn) // to the close: a hang would time out
		if err != nil {
			t.Fatalf("%s: %v after %q, want the connection closed", path, err, b)
		}
		return string(b)
	}
	if got := raw("/head"); got != "HTTP/1.1 200 OK\r\nCon" {
		t.Errorf("/head: %q, want the first 20 bytes of the answer", got)
	}
	if got := raw("/tiny"); got != "HTTP" {
		t.Errorf("/tiny: %q, want 4 bytes", got)
	}
	all := raw("/all")
	if !strings.HasPrefix(all, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(all, "\r\n\r\nhello") || !strings.Contains(all, "Content-Length: 5\r\n") {
		t.Errorf("/all: %q, want the whole answer", all)
	}
	if ex := fresh("GET", hs.URL+"/head", "", 0); ex.resp != nil || ex.err == nil {
		t.Errorf("a client reading /head: %+v, want a malformed answer", ex)
	}
	eventually(t, patience, func() string {
		for path, status := range map[string]float64{"/head": 200, "/all": 200, "/tiny": 0} {
			lines := logLines(logs, path)
			if len(lines) == 0 || lines[0]["fault"] != "limit" || lines[0]["status"] != status {
				return fmt.Sprintf("%s: log lines %v, want the limit fault with status %v", path, lines, status)
			}
		}
		return ""
	})
}

// TestFaultShapesKeepEffects: a shaped answer is a whole answer, so the
// route runs to its end: its item is saved and its idempotent answer
// stored, and the retry is a replay.
func TestFaultShapesKeepEffects(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{Clock: &testClock{scale: 0}}, `
routes:
  - method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key }
    respond:
      status: 201
      template: true
      body: { id: 'pay_{{ .Call }}' }
      save: { collection: payments, id: 'pay_{{ .Call }}' }
      fault: { kind: latency, latency: 5s }
  - { path: /payments, respond: { list: { collection: payments } } }
`)
	first := do(t, "POST", hs.URL+"/payments", `{}`, "Idempotency-Key", "k")
	again := do(t, "POST", hs.URL+"/payments", `{}`, "Idempotency-Key", "k")
	if first.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("first %d %q, retry %d %q replayed=%q: want the retry to replay the first", first.status, first.body, again.status, again.body, again.header.Get("Idempotent-Replayed"))
	}
	if list := do(t, "GET", hs.URL+"/payments", ""); !strings.Contains(list.body, `"pay_1"`) || strings.Contains(list.body, `"pay_2"`) {
		t.Errorf("payments %s, want pay_1 alone", list.body)
	}
}

// TestRuntimeShapeFaultsSeeded: a shaping fault switched on through POST
// /__admin/faults, with a chance and a jitter, strikes the same requests
// with the same waits on two servers of the same seed, and other ones on
// another seed; the listing describes it with its options.
func TestRuntimeShapeFaultsSeeded(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) string {
		clock := &testClock{scale: 0}
		_, hs, _ := serveYAML(t, Options{Clock: clock, Rand: SeededRand(seed)}, `
routes:
  - { name: charge, method: POST, path: /charges, respond: { status: 201, body: ok } }
`)
		r := do(t, "POST", hs.URL+"/__admin/faults", `{"route": "charge", "fault": {"kind": "latency", "latency": "1s", "jitter": "500ms", "chance": 0.5}}`, "Content-Type", "application/json")
		if r.status != 201 || !strings.Contains(r.body, `"text": "latency of 1s ± 500ms, chance 0.5"`) {
			t.Fatalf("switch on: %d %s", r.status, r.body)
		}
		var pattern strings.Builder
		for range 30 {
			before, _ := clock.recorded()
			if got := do(t, "POST", hs.URL+"/charges", ""); got.status != 201 || got.body != "ok" {
				t.Fatalf("POST /charges: %d %q, want the whole answer", got.status, got.body)
			}
			after, _ := clock.recorded()
			if len(after) == len(before) {
				pattern.WriteString("- ")
			} else {
				pattern.WriteString(after[len(after)-1].String() + " ")
			}
		}
		return pattern.String()
	}
	a := run(11)
	if n := strings.Count(a, "- "); n < 5 || n > 25 {
		t.Errorf("%d of 30 requests without the fault at chance 0.5: %s", n, a)
	}
	if b := run(11); a != b {
		t.Errorf("seed 11 twice:\n%s\n%s", a, b)
	}
	if c := run(12); a == c {
		t.Errorf("seeds 11 and 12 gave the same pattern: %s", a)
	}
}
