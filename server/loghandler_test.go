package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/internal/loghandler"
)

// TestRequestLineMatchesRecord holds the request line's direct formatting
// to what Handle writes for the record Server.logOutcome builds.
func TestRequestLineMatchesRecord(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 13, 42, 37, 843500000, time.Local)
	for _, asJSON := range []bool{false, true} {
		for _, c := range []struct {
			method, path, route string
			status              int
			duration, delay     time.Duration
			idem                string // the idempotency outcome, if any
		}{
			{"GET", "/payments/pay_demo_0001", "payment found", 200, 24897 * time.Nanosecond, 0, ""},
			{"POST", "/transfers", "transfer created", 0, 3 * time.Second, 10 * time.Second, ""},
			{"BREW", "/a b=\"c\"\n\xff", "", 404, 0, time.Millisecond, ""},
			{"GET", "/x", "tiny", 200, time.Nanosecond, 25 * time.Minute, ""},
			{"POST", "/payments", "create payment", 201, 51 * time.Microsecond, 0, "replayed"},
			{"POST", "/transfers", "transfer", 409, time.Millisecond, 2 * time.Second, "in-flight"},
		} {
			var direct, preformatted, viaRecord bytes.Buffer
			h := NewLogHandler(&direct, asJSON, nil).WithAttrs([]slog.Attr{slog.String("pid", "7")}).(*loghandler.Handler)
			_ = h.HandleRequest(at.Add(c.duration), c.method, c.path, c.route, nil, c.status, c.duration, c.delay, c.idem)
			// The route formatted once, as a route's runtime keeps it.
			hp := NewLogHandler(&preformatted, asJSON, nil).WithAttrs([]slog.Attr{slog.String("pid", "7")}).(*loghandler.Handler)
			_ = hp.HandleRequest(at.Add(c.duration), c.method, c.path, c.route, hp.Value(c.route), c.status, c.duration, c.delay, c.idem)
			s := &Server{log: slog.New(NewLogHandler(&viaRecord, asJSON, nil).WithAttrs([]slog.Attr{slog.String("pid", "7")})),
				opts: Options{Clock: fixedClock{at.Add(c.duration)}}}
			r := httptest.NewRequest(c.method, "/", nil)
			r.URL.Path = c.path
			x := &exchange{s: s, r: r, start: at, out: result{route: c.route, status: c.status, delay: c.delay, idem: c.idem}}
			s.logOutcome(s.log.Handler(), slog.LevelInfo, x, at.Add(c.duration), true)
			want := viaRecord.String()
			if direct.String() != want {
				t.Errorf("json=%v:\ndirect:     %q\nvia record: %q", asJSON, direct.String(), want)
			}
			if preformatted.String() != want {
				t.Errorf("json=%v:\nroute formatted once: %q\nvia record:           %q", asJSON, preformatted.String(), want)
			}
		}
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                           { return c.t }
func (c fixedClock) Wait(context.Context, time.Duration) bool { return true }

// TestLogDurationsInMilliseconds: every duration the server logs, in
// either format, is a number of milliseconds under a key ending in _ms.
func TestLogDurationsInMilliseconds(t *testing.T) {
	for _, asJSON := range []bool{true, false} {
		logs := &syncBuffer{}
		url, stop := serveReal(t, Options{Logger: slog.New(NewLogHandler(logs, asJSON, slog.LevelDebug)), Clock: &testClock{scale: 0}},
			"routes: [{ path: /slow, respond: { body: done, delay: 1500ms } }]")
		waitListening(t, url)
		do(t, "GET", url+"/slow", "")
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			fields := map[string]any{}
			if asJSON {
				if err := json.Unmarshal([]byte(line), &fields); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
			} else {
				for _, f := range strings.Fields(line) {
					if k, v, ok := strings.Cut(f, "="); ok {
						fields[k] = v
					}
				}
			}
			for k, v := range fields {
				switch {
				case strings.HasSuffix(k, "_ms"):
					seen[k] = true
					n, isNumber := v.(float64)
					if !asJSON {
						var err error
						n, err = strconv.ParseFloat(v.(string), 64)
						isNumber = err == nil
					}
					if !isNumber || n < 0 {
						t.Errorf("json=%v: %s=%v is not a number of milliseconds: %s", asJSON, k, v, line)
					}
					if k == "delay_ms" && n != 1500 || k == "timeout_ms" && n != 5000 {
						t.Errorf("json=%v: %s=%v: %s", asJSON, k, v, line)
					}
				case k == "duration" || k == "delay" || k == "timeout":
					t.Errorf("json=%v: %s=%v, a duration not in milliseconds: %s", asJSON, k, v, line)
				}
			}
		}
		for _, k := range []string{"duration_ms", "delay_ms", "timeout_ms"} {
			if !seen[k] {
				t.Errorf("json=%v: no %s in the logs:\n%s", asJSON, k, logs.String())
			}
		}
	}
}

// TestServedRouteInRequestLine: the route's name in the request line of a
// request served at info level (the line written without a record, the
// name formatted once per route) is what slog's own handlers write for
// it, quotes and escapes included, in text and JSON.
func TestServedRouteInRequestLine(t *testing.T) {
	names := []string{"plain", "payment found", `say "hi"`, `back\slash`, "naïve café", "tab\there"}
	var yaml strings.Builder
	yaml.WriteString("routes:\n")
	for i, name := range names {
		fmt.Fprintf(&yaml, "  - { name: %s, path: /r%d, respond: { status: 204 } }\n", strconv.Quote(name), i)
	}
	for _, asJSON := range []bool{false, true} {
		logs := &syncBuffer{}
		url, stop := serveReal(t, Options{Logger: slog.New(NewLogHandler(logs, asJSON, slog.LevelInfo))}, yaml.String())
		waitListening(t, url)
		for i := range names {
			if r := do(t, "GET", url+"/r"+strconv.Itoa(i), ""); r.status != 204 {
				t.Fatalf("GET /r%d: %d %s", i, r.status, r.body)
			}
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for i, name := range names {
			// The attribute as slog writes it, alone on its line.
			var attr bytes.Buffer
			drop := &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
					return slog.Attr{}
				}
				return a
			}}
			var h slog.Handler = slog.NewTextHandler(&attr, drop)
			if asJSON {
				h = slog.NewJSONHandler(&attr, drop)
			}
			slog.New(h).Info("", "route", name)
			want := strings.Trim(strings.TrimSpace(attr.String()), "{}")
			path, status := fmt.Sprintf("path=/r%d ", i), " status=204"
			if asJSON {
				path, status = fmt.Sprintf(`"path":"/r%d",`, i), `,"status":204`
			}
			found := false
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, path) {
					found = true
					if !strings.Contains(line, path+want+status) {
						t.Errorf("json=%v: route %q: %q, want %q in it", asJSON, name, line, path+want+status)
					}
				}
			}
			if !found {
				t.Errorf("json=%v: no request line for /r%d in %q", asJSON, i, logs.String())
			}
		}
	}
}
