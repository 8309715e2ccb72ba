package server

import (
	"bufio"
	"context"
	"io"
	"sync"
	"time"
)

// LogWriter buffers log output and writes it out every interval, so that
// a log line per request costs no system call per request. It is safe for
// concurrent use; Run owns the flushing and flushes a last time when its
// context ends.
type LogWriter struct {
	mu sync.Mutex // guards w
	w  *bufio.Writer
}

// NewLogWriter returns a LogWriter writing to w.
func NewLogWriter(w io.Writer) *LogWriter {
	return &LogWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// Write buffers p; a full buffer is written at once.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Flush writes out what is buffered.
func (l *LogWriter) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Flush()
}

// Run flushes every interval until ctx ends, then flushes once more.
func (l *LogWriter) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = l.Flush()
		case <-ctx.Done():
			_ = l.Flush()
			return
		}
	}
}
