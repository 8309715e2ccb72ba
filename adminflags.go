package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/scenariomock/scenariomock/adminclient"
)

// adminFlags are the flags of the commands that ask a running server
// (verify, requests): where it is, its token, and the journal filters.
type adminFlags struct {
	addr    string
	admin   string // --admin-addr: asked instead of addr
	token   string
	timeout time.Duration
	tls     tlsOptions // --tls-cert, --tls-self-signed: ask over HTTPS, as health does
	filter  adminclient.Filter
	headers []string // Name=value, repeatable
	query   []string
	form    []string
	body    []string
	states  []string
	proxied bool // --proxied: filter.Proxied = "true"
	// --violating: filter.Violating = "true"
	violating bool
}

func (a *adminFlags) register(fs *pflag.FlagSet) {
	a.registerServer(fs)
	f := &a.filter
	fs.StringVar(&f.Route, "route", "", "requests the route of this name answered")
	fs.StringVar(&f.Session, "session", "", "requests of this test session (header X-Scenariomock-Session or path prefix /__session/NAME/)")
	fs.StringVar(&f.Method, "method", "", "requests with this method")
	fs.StringVar(&f.Path, "path", "", "requests with this path, or a glob: * is one segment's characters, ** anything")
	fs.StringVar(&f.Status, "status", "", "requests answered with this status (201) or class (4xx)")
	fs.StringArrayVar(&a.headers, "header", nil, "requests with this header value, as Name=value (repeatable)")
	fs.StringArrayVar(&a.query, "query", nil, "requests with this query parameter value, as name=value (repeatable)")
	fs.StringArrayVar(&a.form, "form", nil, "requests whose URL-encoded form body has this field value, as amount=2000 or metadata[order_id]=7 (repeatable)")
	fs.StringArrayVar(&a.body, "body", nil, "requests whose JSON body has this value at a dotted path, as amount=9800 or customer.id=cus_1 (repeatable)")
	fs.StringArrayVar(&a.states, "state", nil, "requests that moved the route state of this name to this state, as order=paid (repeatable)")
	fs.StringVar(&f.StateKey, "state-key", "", "requests that moved a route state of this per: key, as ord_7 (with --state order=paid: order ord_7 was paid)")
	fs.StringVar(&f.Idempotency, "idempotency", "", "requests with this idempotency outcome: new, replayed, mismatch, in-flight, missing-key or invalid-key")
	fs.StringVar(&f.Matched, "matched", "", "true: requests a route answered; false: requests no route matched")
	fs.BoolVar(&a.proxied, "proxied", false, "requests forwarded to an upstream (a proxy: route or --proxy-unmatched); verify --proxied --none proves none reached it")
	fs.BoolVar(&a.violating, "violating", false, "requests that broke their OpenAPI operation, or whose upstream's answer did (in proxy mode); verify --violating --none proves every one kept the contract")
	fs.StringVar(&f.Since, "since", "", "requests after this RFC 3339 time or entry ID")
}

// registerServer registers the flags that say where the server is and how
// to reach it, without the journal filters (for trigger).
func (a *adminFlags) registerServer(fs *pflag.FlagSet) {
	fs.StringVar(&a.addr, "addr", "127.0.0.1:8080", "the server: http://host:port or host:port (0.0.0.0 means this host)")
	fs.StringVar(&a.admin, "admin-addr", "", "the server's admin API when serve has it on an address of its own (--admin-addr); asked instead of --addr")
	fs.StringVar(&a.token, "admin-token", "", "the server's admin token, sent as Authorization: Bearer (better SCENARIOMOCK_ADMIN_TOKEN: a flag shows in ps)")
	fs.DurationVar(&a.timeout, "timeout", 10*time.Second, "how long to wait for the server's answers")
	a.tls.flags(fs, false)
}

// build checks the flags and returns the client and the filter. Errors
// are usage errors.
func (a *adminFlags) build() (*adminclient.Client, adminclient.Filter, error) {
	f := a.filter
	if a.proxied {
		f.Proxied = "true"
	}
	if a.violating {
		f.Violating = "true"
	}
	var err error
	if f.Headers, err = pairs("--header", a.headers); err != nil {
		return nil, f, withCode(exitUsage, err)
	}
	if f.Query, err = pairs("--query", a.query); err != nil {
		return nil, f, withCode(exitUsage, err)
	}
	if f.Form, err = pairs("--form", a.form); err != nil {
		return nil, f, withCode(exitUsage, err)
	}
	if f.Body, err = pairs("--body", a.body); err != nil {
		return nil, f, withCode(exitUsage, err)
	}
	if f.States, err = pairs("--state", a.states); err != nil {
		return nil, f, withCode(exitUsage, err)
	}
	switch f.Matched {
	case "", "true", "false":
	default:
		return nil, f, withCode(exitUsage, fmt.Errorf("--matched %q: want true or false", f.Matched))
	}
	if a.timeout <= 0 {
		return nil, f, withCode(exitUsage, fmt.Errorf("--timeout %s: want a positive duration", a.timeout))
	}
	c, err := a.client()
	if err != nil {
		return nil, f, withCode(exitUsage, err)
	}
	return c, f, nil
}

// client is a client of the admin API: at --admin-addr when given, as
// health does, else at --addr.
func (a *adminFlags) client() (*adminclient.Client, error) {
	flag, addr := "--addr", a.addr
	if a.admin != "" {
		flag, addr = "--admin-addr", a.admin
	}
	hc, scheme, err := a.tls.httpClient()
	if err != nil {
		return nil, err
	}
	if scheme == "https" && !strings.Contains(addr, "://") {
		addr = "https://" + addr
	}
	c, err := adminclient.New(addr, adminclient.WithToken(a.token), adminclient.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return c, nil
}

// pairs reads repeated Name=value flags.
func pairs(flag string, vals []string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(vals))
	for _, v := range vals {
		name, value, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%s %q: want name=value", flag, v)
		}
		if prev, dup := m[name]; dup && prev != value {
			return nil, fmt.Errorf("%s %s: given twice, as %q and %q", flag, name, prev, value)
		}
		m[name] = value
	}
	return m, nil
}

// noAdminHint is what to do when --addr is the scenario port of a serve
// that has its admin API on an address of its own.
const noAdminHint = "no admin API at this address: when serve has --admin-addr, give the same --admin-addr here, or set SCENARIOMOCK_ADMIN_ADDR"

// adminError gives an admin call's error its exit code: no answer is
// exitUnreachable; a refused filter, token or host is usage (a bad flag or
// SCENARIOMOCK_* variable); anything else exitFailure.
func adminError(err error, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	var se *adminclient.StatusError
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.As(err, &unknownCA):
		// The server answered, over TLS, with a certificate not trusted.
		return withCode(exitUsage, fmt.Errorf("%w (pass --tls-cert with the certificate serve uses, or --tls-self-signed for one it made)", err))
	case errors.Is(err, adminclient.ErrUnreachable):
		return withCode(exitUnreachable, fmt.Errorf("%w (is `scenariomock serve` running at that address?)", err))
	case errors.Is(err, context.DeadlineExceeded):
		return withCode(exitUnreachable, fmt.Errorf("no answer within --timeout %s", timeout))
	case errors.As(err, &se):
		switch se.StatusCode {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
			if strings.Contains(se.Detail, "HTTP request to an HTTPS server") {
				err = fmt.Errorf("%w (the server speaks HTTPS: pass --tls-cert or --tls-self-signed, as to serve)", err)
			}
			return &exitError{code: exitUsage, err: err, noHint: true}
		case http.StatusNotFound:
			// The scenario port of a serve that has --admin-addr answers
			// /__admin like any path: no route. A wrong address is
			// usage, as a wrong token is, and not exit 1, which a CI
			// step reads as "the requests were not as expected".
			if strings.HasPrefix(se.Detail, "No route matches") {
				return &exitError{code: exitUsage, err: fmt.Errorf("%w (%s)", err, noAdminHint), noHint: true}
			}
		}
	}
	return withCode(exitFailure, err)
}

// completeRoutes offers the names of the routes the server at --addr
// serves, for `verify --route <TAB>`; nothing when it does not answer
// quickly.
func completeRoutes(a *adminFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		// Completion skips the hooks that read SCENARIOMOCK_* variables.
		if applyEnv(cmd.Flags()) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := a.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		routes, err := c.Routes(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		seen := map[string]bool{}
		for _, r := range routes {
			if seen[r.Name] || !strings.HasPrefix(r.Name, toComplete) {
				continue
			}
			seen[r.Name] = true
			method := "*"
			if len(r.Methods) > 0 {
				method = strings.Join(r.Methods, ",")
			}
			out = append(out, cobra.CompletionWithDesc(r.Name, method+" "+r.Path))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
