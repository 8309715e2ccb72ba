// Command stripesuite runs stripe-go's own test suite against a Stripe mock
// and counts what passes: the measure of issue 15 ("every test that passes
// against stripe-mock passes against us").
//
// stripe-go's tests talk to a mock the way its testing package sets up
// (testing/testing.go): HTTPS, with certificate checks off, to
// localhost:$STRIPE_MOCK_PORT, after a GET / whose Stripe-Mock-Version
// header must be "master" or at least 0.109.0. A package whose tests import
// that package exits in init, running no test, when the mock is not there
// or sends no such header; stripesuite reports those packages apart.
//
//	# stripe-mock, installed from the module proxy into a temporary GOBIN:
//	go run ./bench/stripesuite -stripe-mock v0.203.0 -out /tmp/suite-stripe-mock
//	# any server command; {port} is a free loopback port, {addr} 127.0.0.1:{port}:
//	go run ./bench/stripesuite -out /tmp/suite-ours -baseline bench/stripesuite/testdata/stripe-mock-v0.203.0.passed -- \
//	    go run . serve --example stripe --tls-self-signed --addr {addr}
//	# a server already listening on 127.0.0.1:12112:
//	go run ./bench/stripesuite -port 12112
//
// It downloads github.com/stripe/stripe-go/v82 (-version) with `go mod
// download` into the module cache, copies it to a temporary directory (the
// cache is read-only), starts the server in a process group of its own,
// waits for it to answer GET /, runs `go test -json -count=1 ./...` there
// with STRIPE_MOCK_PORT set, and stops the server and everything go test
// started. -timeout bounds the whole run. stripe-go's tests are run as
// published, never edited.
//
// It counts top-level tests, as `go test` lists them (subtests are counted
// apart), and writes into -out: passed.txt, failed.txt (each failing test
// with its first error), skipped.txt, summary.md, test.json (go test's
// events), go-test.stderr and server.log. With -baseline, a passed.txt of
// an earlier run (the committed one is stripe-mock v0.203.0's), it lists
// the tests that passed there and do not pass here in missing.txt and exits
// 1 if there are any; with -known too, a list of tests known to be missing,
// only if one of them is not in that list (and it prints the known ones that
// pass now). It exits 2 when it could not run the suite at all.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.module, "module", "github.com/stripe/stripe-go/v82", "the module whose tests are run")
	flag.StringVar(&cfg.version, "version", "v82.5.1", "its version, from the Go module proxy")
	flag.StringVar(&cfg.dir, "dir", "", "run the tests of this module directory instead of downloading -module (it is not modified)")
	flag.IntVar(&cfg.port, "port", 0, "test against a server already listening on this port (HTTPS on localhost) instead of starting one")
	flag.StringVar(&cfg.stripeMock, "stripe-mock", "", "go install github.com/stripe/stripe-mock at this version (v0.203.0) into a temporary GOBIN and test against it, on loopback")
	flag.StringVar(&cfg.out, "out", "", "directory for the results (default: a new temporary directory, printed)")
	flag.StringVar(&cfg.baseline, "baseline", "", "a passed.txt of an earlier run: list the tests that passed there and not here, and exit 1 if any")
	flag.DurationVar(&cfg.timeout, "timeout", 25*time.Minute, "bound on the whole run: download, server start and tests")
	flag.DurationVar(&cfg.ready, "ready", 3*time.Minute, "how long the server may take to answer GET / (a `go run` server compiles first)")
	flag.StringVar(&cfg.run, "run", "", "only run tests matching this regexp (go test -run)")
	flag.IntVar(&cfg.parallel, "p", 0, "packages go test builds and runs at once (go test -p; default GOMAXPROCS)")
	known := flag.String("known", "", "with -baseline, a list of tests known to be missing (a missing.txt): exit 1 only for a missing test not in it")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary copy of the module (its path is printed)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: stripesuite [flags] [-- server command with {port} or {addr}]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	cfg.server = flag.Args()
	if n := countSources(cfg); n != 1 {
		fmt.Fprintln(os.Stderr, "stripesuite: give exactly one of -port, -stripe-mock or a server command after --")
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stripesuite:", err)
		stop()
		os.Exit(2)
	}
	missing := res.missing
	if *known != "" {
		if missing, err = compareKnown(*known, res.missing, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "stripesuite:", err)
			stop()
			os.Exit(2)
		}
	}
	if len(missing) > 0 {
		stop()
		os.Exit(1)
	}
}

// countSources says how many ways of reaching a server cfg names.
func countSources(cfg config) int {
	n := 0
	if cfg.port != 0 {
		n++
	}
	if cfg.stripeMock != "" {
		n++
	}
	if len(cfg.server) > 0 {
		n++
	}
	return n
}
