// Package loghandler makes the log line every request writes cheap: a
// slog.Handler (New) that writes exactly what slog's TextHandler or
// JSONHandler write with default options, in about half the time and
// without a lock of its own, with a direct path for the request line
// (Handler.HandleRequest); and a Writer that buffers log output so that a
// request's line costs no system call. It knows nothing of scenarios or
// HTTP: package server builds the request line from a request's outcome,
// and main sets the handler up from --log-format and --log-level.
package loghandler
