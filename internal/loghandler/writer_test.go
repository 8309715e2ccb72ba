package loghandler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// patience is how long a test waits for something that takes
// milliseconds, generous for a loaded machine.
const patience = 30 * time.Second

// slowWriter records writes and can be made to stall.
type slowWriter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
	stall  chan struct{} // while open and not nil, writes wait
}

func (s *slowWriter) Write(p []byte) (int, error) {
	if s.stall != nil {
		<-s.stall
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *slowWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogWriterKeepsEveryLineInOrder writes from many goroutines while Run
// writes out, and checks that each goroutine's lines all arrive, in order,
// whole, in few writes.
func TestLogWriterKeepsEveryLineInOrder(t *testing.T) {
	t.Parallel()
	dst := &slowWriter{}
	l := NewWriter(dst)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	const interval = 5 * time.Millisecond
	start := time.Now()
	go func() { l.Run(ctx, interval); close(done) }()
	for !func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.running }() {
		time.Sleep(time.Millisecond)
	}
	const writers, lines = 8, 5000
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for i := 0; i < lines; i++ {
				fmt.Fprintf(l, "w%d line %06d %s\n", w, i, strings.Repeat("x", 40))
			}
		})
	}
	wg.Wait()
	cancel()
	<-done
	elapsed := time.Since(start)
	fmt.Fprintf(l, "after run\n") // written through once Run has ended
	next := make([]int, writers)
	out := dst.String()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var w, i int
		if line == "after run" {
			continue
		}
		if _, err := fmt.Sscanf(line, "w%d line %d", &w, &i); err != nil || len(line) != len("w0 line 000000 ")+40 {
			t.Fatalf("torn line %q", line)
		}
		if i != next[w] {
			t.Fatalf("writer %d: line %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
	for w, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d of %d lines arrived", w, n, lines)
		}
	}
	if !strings.HasSuffix(out, "after run\n") {
		t.Error("a line written after Run ended was not written through")
	}
	// Run writes each full buffer and, every interval, the partial one: a
	// loaded machine that stretches the run gets more of the latter, never
	// anything near a write per line.
	full := len(out)/logBuffer + 1
	if limit := full + int(elapsed/interval) + 10; dst.writes > limit {
		t.Errorf("%d writes for %d lines in %s: not buffered (want at most %d: %d full buffers, one a tick)", dst.writes, writers*lines, elapsed, limit, full)
	}
}

// TestLogWriterBackpressure checks that a destination that stops taking
// writes holds writers back after logPending buffers instead of growing
// without bound, and that they go on once it resumes.
func TestLogWriterBackpressure(t *testing.T) {
	t.Parallel()
	dst := &slowWriter{stall: make(chan struct{})}
	l := NewWriter(dst)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx, time.Hour); close(done) }()
	for !func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.running }() {
		time.Sleep(time.Millisecond)
	}
	line := []byte(strings.Repeat("y", 1023) + "\n")
	wrote := make(chan int, 1)
	go func() {
		n := 0
		for i := 0; i < (logPending+4)*logBuffer/len(line); i++ {
			_, _ = l.Write(line)
			n++
		}
		wrote <- n
	}()
	select {
	case <-wrote:
		t.Fatal("a stalled destination did not hold the writer back")
	case <-time.After(300 * time.Millisecond):
	}
	l.mu.Lock()
	held := (len(l.pending)+l.inFlight)*logBuffer + len(l.buf)
	l.mu.Unlock()
	if held > (logPending+2)*logBuffer {
		t.Errorf("%d bytes held while stalled, want at most about %d", held, (logPending+2)*logBuffer)
	}
	close(dst.stall)
	select {
	case <-wrote:
	case <-time.After(patience):
		t.Fatal("the writer did not resume")
	}
	cancel()
	<-done
}

// TestRequestLineIntoWriter checks that a request line formatted straight
// into a running Writer's buffer (HandleRequest's way) is the line written
// through an ordinary io.Writer, in text and JSON, across buffers handed
// to Run (more than logBuffer of lines from several goroutines), and
// written through once Run has ended.
func TestRequestLineIntoWriter(t *testing.T) {
	t.Parallel()
	for _, asJSON := range []bool{false, true} {
		dst := &slowWriter{}
		l := NewWriter(dst)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { l.Run(ctx, 5*time.Millisecond); close(done) }()
		for !func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.running }() {
			time.Sleep(time.Millisecond)
		}
		h := New(l, asJSON, slog.LevelInfo).(*Handler)
		var want bytes.Buffer
		direct := New(&want, asJSON, slog.LevelInfo).(*Handler)
		at := time.Date(2026, 12, 4, 15, 4, 5, 123456789, time.UTC)
		routeText := func(h *Handler, i int) []byte { // formatted here, or once by the caller
			if i%2 == 0 {
				return nil
			}
			return h.Value("payment created")
		}
		line := func(h *Handler, w, i int) {
			idem := ""
			if i%3 == 0 {
				idem = "replayed"
			}
			_ = h.HandleRequest(at.Add(time.Duration(i)*time.Millisecond), "POST", fmt.Sprintf("/w%d/%d", w, i), "payment created", routeText(h, i), 201,
				time.Duration(i)*time.Microsecond, time.Duration(i%2)*time.Second, idem)
		}
		const writers, lines = 4, 2000 // about 600 KB: many buffers
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range lines {
					line(h, w, i)
				}
			})
		}
		wg.Wait()
		cancel()
		<-done
		line(h, writers, 0) // through, Run having ended
		for w := range writers + 1 {
			for i := range lines {
				if w < writers || i == 0 {
					line(direct, w, i)
				}
			}
		}
		got := strings.Split(strings.TrimSuffix(dst.String(), "\n"), "\n")
		slices.Sort(got)
		wantLines := strings.Split(strings.TrimSuffix(want.String(), "\n"), "\n")
		slices.Sort(wantLines)
		if !slices.Equal(got, wantLines) {
			t.Fatalf("json=%v: %d lines, want %d; first: %q, want %q", asJSON, len(got), len(wantLines), got[0], wantLines[0])
		}
	}
}
