// Package browsertest starts a real headless Chromium for tests that stand
// for a user with a browser: a page on one origin calling the mock on
// another (CORS), and later the admin dashboard. It is driven with
// chromedp and collects what the page writes to its console, errors
// included, which is where a browser reports what it refused.
//
// It is imported by tests only. A test that calls New is skipped when no
// Chromium is installed (apt-get install chromium, or point $CHROMIUM at
// one).
package browsertest
