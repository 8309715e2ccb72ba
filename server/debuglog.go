package server

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
)

// debugBodyMax is how much of a request body a debug log line shows.
const debugBodyMax = 4096

// requestDetails are what a request's log line adds at debug: its query,
// its headers (names sorted, repeated values joined by ", ") and its body,
// cut at debugBodyMax, with its full length when cut.
func requestDetails(r *http.Request, body []byte) []slog.Attr {
	var attrs []slog.Attr
	if q := r.URL.RawQuery; q != "" {
		attrs = append(attrs, slog.String("query", q))
	}
	if len(r.Header) > 0 {
		names := make([]string, 0, len(r.Header))
		for name := range r.Header {
			names = append(names, name)
		}
		slices.Sort(names)
		headers := make([]any, len(names))
		for i, name := range names {
			headers[i] = slog.String(name, strings.Join(r.Header[name], ", "))
		}
		attrs = append(attrs, slog.Group("headers", headers...))
	}
	if len(body) > 0 {
		if len(body) > debugBodyMax {
			// The body buffer is reused after the request: the string
			// conversion copies what the line keeps.
			attrs = append(attrs, slog.String("body", string(body[:debugBodyMax])+"…"), slog.Int("bodyBytes", len(body)))
		} else {
			attrs = append(attrs, slog.String("body", string(body)))
		}
	}
	return attrs
}
