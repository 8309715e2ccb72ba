package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// Browser is one tab of a headless Chromium that lives as long as the
// test. It is safe for concurrent use.
type Browser struct {
	ctx     context.Context
	mu      sync.Mutex // guards console
	console []chromedp.ConsoleMessage
}

// Path returns the Chromium to run: $CHROMIUM, or /usr/bin/chromium, or
// chromium or chromium-browser on $PATH; "" when there is none.
func Path() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts headless Chromium with a fresh profile and opens a tab (extra
// options after the defaults, such as chromedp.WindowSize), or
// fails the test when Chromium is not installed. The sandbox is off
// (--no-sandbox), as it must be for root in a container. The browser
// stops when the test ends.
func New(t testing.TB, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		// Fail, not skip: a browser test that passes without a browser
		// proves nothing (.ci/run installs it).
		t.Fatal("no Chromium: install it (apt-get install -y chromium) or set $CHROMIUM to its path")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()),
	)
	opts = append(opts, extra...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	b := &Browser{ctx: ctx}
	// Console starts the browser and opens the tab; it subscribes at once,
	// so nothing the page writes is lost.
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return // the browser stopped, or failed to start (Run reports it)
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
		<-done
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return b
}

// Context returns the tab's context, for chromedp.Run and chromedp.Do.
// Derive a timeout from it for one action; a timeout on it would stop
// the browser.
func (b *Browser) Context() context.Context { return b.ctx }

// Errors returns the errors the page wrote to its console so far:
// console.error calls, uncaught exceptions and the browser's own error
// entries (such as a request blocked by CORS policy).
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			out = append(out, m.String())
		}
	}
	return out
}

// Problems returns what a page should not write to its console: errors,
// warnings, uncaught exceptions and failed asserts, each with the source
// and line that wrote it.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		switch {
		case m.Type == chromedp.ConsoleError, m.Type == chromedp.ConsoleWarning, m.Type == "assert", m.IsException():
			out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
		}
	}
	return out
}
