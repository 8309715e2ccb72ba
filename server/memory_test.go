package server

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTimer records what memoryReturn asks of its timer.
type fakeTimer struct {
	d       time.Duration // the latest wait asked for
	stopped bool
}

func (f *fakeTimer) Reset(d time.Duration) bool { f.d = d; return true }
func (f *fakeTimer) Stop() bool                 { f.stopped = true; return true }

// TestMemoryReturnSchedule: when memoryReturn returns memory to the
// system, on a clock the test moves: only large buffers count; the first
// return comes returnDelay after returnAfter bytes ended, later while
// large ones keep ending, but never more than returnEvery after the
// first; a run of the timer before its time frees nothing; nothing after
// stop.
func TestMemoryReturnSchedule(t *testing.T) {
	const mib = 1 << 20
	now := time.Unix(1_000_000, 0)
	var timers []*fakeTimer
	freed := 0
	m := &memoryReturn{
		now: func() time.Time { return now },
		after: func(d time.Duration, _ func()) timer {
			ft := &fakeTimer{d: d}
			timers = append(timers, ft)
			return ft
		},
		free: func() { freed++ },
	}
	for range 1000 {
		m.let(512<<10, 1023<<10) // under largeBuffer each: pooled or left to the runtime
	}
	if len(timers) != 0 || m.ended != 0 {
		t.Fatalf("small buffers counted: %d bytes, %d timers", m.ended, len(timers))
	}
	for range 3 {
		m.let(8*mib, 8*mib)
	}
	if len(timers) != 0 {
		t.Fatalf("armed at %d MiB, before returnAfter", m.ended/mib)
	}
	m.let(8*mib, 8*mib) // 64 MiB
	if len(timers) != 1 || timers[0].d != returnDelay {
		t.Fatalf("at 64 MiB: timers %v, want one of %s", timers, returnDelay)
	}
	// The burst goes on for 12 s, a large answer every half second: the
	// return waits for its end, but no longer than returnEvery.
	for range 24 {
		now = now.Add(500 * time.Millisecond)
		m.give() // a run of the timer that a Reset overtook
		if freed != 0 && now.Before(m.latest) {
			t.Fatalf("freed at %s, before the burst ended", now)
		}
		m.let(0, 8*mib)
	}
	if freed != 1 {
		t.Fatalf("a 12 s burst: %d returns, want 1 (returnEvery after the first large ones)", freed)
	}
	// Its last 4 answers (32 MiB) and 32 MiB more: the next return.
	if len(timers) != 1 {
		t.Fatalf("%d timers armed by the burst, want 1", len(timers))
	}
	m.let(32*mib, 0)
	if len(timers) != 2 || timers[1].d != returnDelay {
		t.Fatalf("after the first return, 64 MiB more armed %d timers, want a second of %s", len(timers), returnDelay)
	}
	now = now.Add(returnDelay)
	m.give()
	if freed != 2 || m.ended != 0 || m.timer != nil {
		t.Fatalf("after the burst: %d returns, %d bytes pending, timer %v; want 2, 0, none", freed, m.ended, m.timer)
	}
	for range 8 {
		m.let(8*mib, 0)
	}
	m.stop()
	if !timers[2].stopped {
		t.Error("stop left the timer armed")
	}
	now = now.Add(time.Hour)
	m.give()
	m.let(64*mib, 0)
	if freed != 2 || len(timers) != 3 {
		t.Errorf("after stop: %d returns, %d timers; want none more", freed, len(timers))
	}
}

// TestStalledReadersReturnMemory: clients that ask for large answers and
// never read them are dropped at WriteTimeout, and the server then
// returns the memory of their bodies and answers to the system (issue 19
// item 5: freed memory stayed in RSS for minutes). Over the real stack;
// the return itself (debug.FreeOSMemory) is counted, not RSS, which the
// test process shares with its clients.
func TestStalledReadersReturnMemory(t *testing.T) {
	t.Parallel()
	const size, clients = 12 << 20, 4 // 4 x (12 MiB body + 12 MiB answer) > returnAfter
	opts := Options{WriteTimeout: 300 * time.Millisecond, MaxBody: 2 * size, MaxTemplateOutput: 2 * size}
	s, base, logs := serveYAMLRunning(t, opts, `
routes:
  - { method: POST, path: /echo, respond: { template: true, body: "{{ .Request.Body }}" } }
`)
	var returned atomic.Int64
	s.memory.free = func() { returned.Add(1) }
	body := strings.Repeat("x", size)
	for range clients {
		conn := dialSmallWindow(t, base)
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, body); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, patience, func() string {
		if n := strings.Count(logs.String(), `"path":"/echo"`); n < clients {
			return fmt.Sprintf("%d of %d handlers of clients that never read have returned", n, clients)
		}
		if returned.Load() == 0 {
			return "the dropped answers' memory was not returned to the system"
		}
		return ""
	})
}

// TestStalledStreamsReturnMemory: clients of the request stream that
// never read are dropped at WriteTimeout, and the server then returns
// the memory of the journal page each held (issue 19 item 8, as item 5).
func TestStalledStreamsReturnMemory(t *testing.T) {
	t.Parallel()
	const bodySize, streams = 64 << 10, 5 // a page of 256 such entries: 16 MiB a stream
	opts := Options{WriteTimeout: time.Second, JournalBodyLimit: bodySize}
	s, base, _ := serveYAMLRunning(t, opts, `
routes:
  - { method: POST, path: /fill, respond: { status: 204 } }
`)
	var returned atomic.Int64
	s.memory.free = func() { returned.Add(1) }
	body := strings.Repeat("x", bodySize)
	for i := range journalPage {
		// A connection kept alive may be closed as it is reused (a
		// loaded machine, a short WriteTimeout): the fill is tried again.
		r, err := doCtx(t.Context(), "POST", base+"/fill", body)
		if err != nil {
			r, err = doCtx(t.Context(), "POST", base+"/fill", body)
		}
		if err != nil || r.status != 204 {
			t.Fatalf("fill %d: %v %d", i, err, r.status)
		}
	}
	for range streams {
		conn := dialSmallWindow(t, base)
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "GET /__admin/requests/stream?after=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, patience, func() string {
		if returned.Load() == 0 {
			return "the journal pages of the dropped streams were not returned to the system"
		}
		return ""
	})
}
