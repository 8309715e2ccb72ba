package server

import (
	"io"
	"log/slog"
	"time"

	"github.com/scenariomock/scenariomock/internal/loghandler"
)

// NewLogHandler returns the log handler the server is fastest with: one
// that writes what slog's TextHandler (or, with asJSON, JSONHandler)
// writes, and the request line without building a record
// (internal/loghandler). w must be safe for concurrent use (a LogWriter
// is).
func NewLogHandler(w io.Writer, asJSON bool, level slog.Leveler) slog.Handler {
	return loghandler.New(w, asJSON, level)
}

// LogWriter buffers log output so that the log line every request writes
// costs no system call on the request's path (loghandler.Writer). It is
// safe for concurrent use.
type LogWriter = loghandler.Writer

// NewLogWriter returns a LogWriter writing to w; its Run writes out.
func NewLogWriter(w io.Writer) *LogWriter { return loghandler.NewWriter(w) }

// requestMsg is the message of the request log line.
const requestMsg = loghandler.RequestMsg

// millis is a duration as the logs give every duration: milliseconds.
func millis(d time.Duration) float64 { return loghandler.Millis(d) }
