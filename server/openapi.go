package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/openapi"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// This file is the server's one meeting point with routes compiled from an
// OpenAPI document (package openapi): their requests are checked before
// any state is touched, and their answers are generated where a canned
// response would be written. Everything else (idempotency, sequences,
// delays, faults, the journal) treats them as any route.

// generatedOperation returns the operation of a generated route, and makes
// its prepared responses generate their answers; nil for a YAML route.
func generatedOperation(r *scenarios.Route, responses []*prepared) *openapi.Operation {
	op, ok := r.Operation.(*openapi.Operation)
	if !ok {
		return nil
	}
	updated := slices.ContainsFunc(r.Events, func(e *scenarios.Event) bool { return strings.HasSuffix(e.Type, ".updated") })
	var refuse, cases []refusal
	for _, rf := range r.Refuse {
		refuse = append(refuse, refusal{rf.Item, rf.Holds, prepare(rf.Response)})
	}
	for _, c := range r.Cases {
		p := prepare(c.Response)
		generates(p, op, updated)
		p.create = r.CreateUnknown
		cases = append(cases, refusal{c.Item, c.Holds, p})
	}
	for _, p := range responses {
		generates(p, op, updated)
		p.create = r.CreateUnknown
		p.refuse, p.cases = refuse, cases
		if p.missing != nil && slices.ContainsFunc(cases, func(c refusal) bool { return c.p.missing == nil }) {
			// A case without a missing: of its own has this response's
			// (the route's, or this step's of a sequence).
			p.cases = make([]refusal, len(cases))
			for i, c := range cases {
				if c.p.missing == nil {
					own := *c.p
					own.missing = p.missing
					c.p = &own
				}
				p.cases[i] = c
			}
		}
	}
	return op
}

// generates makes p a response of op: its answer generated, not canned.
func generates(p *prepared, op *openapi.Operation, updated bool) {
	p.op, p.before = op, updated
	p.templated = true
	kept := p.header[:0]
	for _, h := range p.header {
		if h.name != "Content-Length" { // known per request
			kept = append(kept, h)
		}
	}
	p.header = kept
}

// check is the stage before claim for a route compiled from an OpenAPI
// document: it validates the request against its operation. A refused
// request (validate: enforce) gets the refusal as its answer and check
// returns false; with validate: report the request goes on. Either way the
// violations go to the journal entry, the log and the answer's
// sl-violations header (Prism's). A request refused here
// never reaches the idempotency store: Stripe keeps no result for a
// request that failed validation.
func (s *Server) check(x *exchange) bool {
	if x.rt == nil || x.rt.op == nil {
		return true
	}
	op := x.rt.op
	vs, values := op.CheckMatched(x.in.HTTP, x.body, x.m.Vars) // as the route acts (actFor)
	x.opValues = values
	if len(vs) == 0 {
		return true
	}
	x.violations = vs
	summary := summarize(vs)
	x.entry.Violations = summary // record fills in the rest of the entry
	// Prism's header listing them, on the answer whether it serves the
	// request (report) or refuses it: tooling written against Prism reads
	// it.
	x.w.Header().Set("Sl-Violations", openapi.ViolationsHeader(vs))
	s.log.Warn("request does not match its OpenAPI operation", "route", op.Name, "mode", op.Mode(), "violations", strings.Join(summary, "; "))
	if op.Mode() == "report" {
		return true
	}
	status, contentType, b := openapi.Refusal(op, vs)
	rec := &x.rec
	rec.apart(x)
	h := rec.Header()
	// The route's headers go on its refusal too, as they go on its
	// idempotency refusals: a file's defaults say "every answer" (the
	// Stripe example's Request-Id, which stripe-go puts in its error).
	// One that does not render is left off: the refusal is the answer.
	if len(x.rt.responses) > 0 {
		if err := x.rt.responses[0].headers(h, s.opts.MaxTemplateOutput, x); err != nil {
			s.log.Warn("a header of the route did not render on its refusal", "route", x.m.Route.Name, "error", err)
		}
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	rec.WriteHeader(status)
	_, _ = rec.Write(b)
	x.kind = answerRecorded
	return false
}

// summarize writes each violation as the journal and the log show it:
// where (in, name, pointer), then what; an answer's start "response".
func summarize(vs []openapi.Violation) []string {
	summary := make([]string, len(vs))
	for i, v := range vs {
		where := v.In
		if v.OfAnswer() {
			where = "response " + where
		}
		for _, part := range []string{v.Name, v.Pointer} {
			if part != "" {
				where += " " + part
			}
		}
		summary[i] = where + ": " + v.Detail
	}
	return summary
}

// checkAnswer checks an upstream's answer, read whole into x.rec, against
// the route's operation (Prism's proxy mode: proxy: on a route that names
// an operation, or the openapi: block's). Its violations go where a
// request's go, after them: the journal entry, the log, the sl-violations
// header. Under validate: report the answer is sent as the upstream gave
// it; under enforce it is replaced by a 502 problem that lists them (the
// upstream broke the contract the client was written against), and
// checkAnswer returns false.
func (s *Server) checkAnswer(x *exchange, upstreamURL string) bool {
	op := x.rt.op
	rec := &x.rec
	vs := op.CheckAnswer(x.r, rec.status, rec.header, rec.body)
	if len(vs) == 0 {
		return true
	}
	summary := summarize(vs)
	x.entry.Violations = append(x.entry.Violations, summary...)
	header := openapi.ViolationsHeader(append(slices.Clip(x.violations), vs...))
	s.log.Warn("the upstream's answer does not match its OpenAPI operation", "route", op.Name, "mode", op.Mode(), "upstream", upstreamURL, "status", rec.status, "violations", strings.Join(summary, "; "))
	if op.Mode() == "report" {
		rec.header.Set("Sl-Violations", header)
		return true
	}
	x.w.Header().Set("Sl-Violations", header)
	p := newProblem(http.StatusBadGateway, fmt.Sprintf("The upstream %s answered %d, which does not match operation %s: %s.", upstreamURL, rec.status, op.Name, strings.Join(summary, "; ")))
	p.Errors = summary
	x.answerProblem(p)
	return false
}

// writeGenerated writes the answer the operation generates for the
// request in d. A route written in YAML that names the operation
// (operation:) adds to it: its body is laid on the answer, and on what a
// create, update or action stores (openapi.Exchange.Patch), and its
// override: after the request's values (Exchange.Override; a template
// with template: true, as the body is); its missing:
// answers the operation's 404 (an id never created, or deleted). A body
// template sees the object a read, update, action or delete acts on, as
// stored before the request, as .Item (an empty object when none is: a
// create, or an id unknownIds: generate answers). Its refuse: answers in
// the operation's place when that stored object is in a state it lists.
func (p *prepared) writeGenerated(rec *recorder, limit int, data dataSource) error {
	var patch []byte
	override := p.src.Override
	switch {
	case p.src.JSONTemplate != nil || p.src.OverrideTemplate != nil || p.before || len(p.refuse) > 0 || len(p.cases) > 0:
		d := data.templateData()
		d.op = p.op
		if d.item == nil {
			// The object the operation acts on, as stored, is .Item (under
			// unknownIds: create, as it will be made).
			ctx, ox := data.opExchange()
			ox.Create = p.create
			body, found, err := p.op.Stored(ctx, ox)
			if err != nil {
				return storeErr{err}
			}
			d.Item = map[string]any{} // none stored: .Item.amount is missing, not an error
			if found {
				d.item, d.Item = body, parseItem(body)
			}
		}
		// An id never created goes to the operation (its 404, or
		// unknownIds: generate); a create has no stored object to find.
		if d.item != nil || !p.op.ActsOnStored() {
			for _, rf := range p.refuse {
				ok, err := rf.test(d, limit)
				if err != nil {
					return err
				}
				if ok {
					d.instead = true
					err := rf.p.render(rec, limit, data)
					rec.stored, rec.head = nil, journalHead{} // the route's headers are in it too: stored from the map
					return err
				}
			}
			for _, c := range p.cases {
				ok, err := c.test(d, limit)
				if err != nil {
					return err
				}
				if ok {
					return c.p.writeGenerated(rec, limit, data) // .Item read once: d.item is set
				}
			}
		}
		if t := p.src.OverrideTemplate; t != nil {
			b, err := renderJSON(t, "override", d, limit)
			if err != nil {
				return err
			}
			override = b
		}
		if p.src.JSONTemplate == nil {
			patch = p.src.Body
			break
		}
		b, err := renderJSON(p.src.JSONTemplate, "body", d, limit)
		if err != nil {
			return err
		}
		patch = b
	case len(p.src.Body) > 0:
		patch = p.src.Body
	}
	ctx, ox := data.opExchange()
	ox.Patch, ox.Override, ox.Create = patch, override, p.create
	status, contentType, body, err := p.op.Respond(ctx, ox)
	if err != nil {
		if errors.Is(err, state.ErrFull) || errors.Is(err, state.ErrFenced) {
			return err
		}
		return storeErr{err}
	}
	if p.before {
		// The object as stored now, unexpanded, for the *.updated event's
		// data.object and previous_attributes (an expand[] of the answer
		// is no change).
		after, found, err := p.op.Stored(ctx, ox)
		if err != nil {
			return storeErr{err}
		}
		if found {
			data.templateData().after = after
		}
	}
	if status == http.StatusNotFound && p.missing != nil {
		data.templateData().instead = true
		err := p.missing.render(rec, limit, data)
		rec.stored, rec.head = nil, journalHead{} // the route's headers are in it too: stored from the map
		return err
	}
	succeeded := p.op.Succeeds(status)
	if status >= 200 && status < 300 && !succeeded {
		// Prefer: code= named a 2xx the spec does not declare: its default
		// answer is an error, which no envelope wraps and no event sends.
		data.templateData().instead = true
	}
	if (p.src.Envelope != nil || p.src.EnvelopeText != nil) && succeeded {
		// The answer wraps the operation's, which the events see.
		d := data.templateData()
		d.wrapped, d.answered, d.answeredStatus, d.Answer = true, body, status, parseItem(body)
		if e := p.src.Envelope; e != nil {
			wrapped, err := renderJSON(e, "envelope", d, limit)
			if err != nil {
				return err
			}
			body, contentType = wrapped, "application/json"
		} else {
			buf := renderBuffer{max: limit}
			if err := p.src.EnvelopeText.Execute(&buf, d); err != nil {
				return renderError("envelope", limit, err)
			}
			body, contentType = buf.Bytes(), ""
			if _, set := rec.header["Content-Type"]; !set {
				contentType = scenarios.Sniff(body)
			}
		}
		if p.src.EnvelopeStatus != 0 {
			status = p.src.EnvelopeStatus
		}
	}
	h := rec.header
	for _, kv := range p.op.Headers(status, body, ox.Request) {
		if _, set := h[kv[0]]; !set { // the route's own win
			h[kv[0]] = []string{kv[1]}
		}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	switch {
	case contentType != "":
		h["Content-Type"] = []string{contentType}
	case len(body) == 0:
		delete(h, "Content-Type") // a 204; binary content has one, and nothing to generate
	default:
		if _, set := h["Content-Type"]; !set {
			h["Content-Type"] = []string{"application/json"}
		}
	}
	rec.WriteHeader(status)
	_, _ = rec.Write(body)
	return nil
}

// test reports whether the refusal or case holds for the request in d:
// the stored object contains its item:, and its holds: renders true. A
// holds: that renders anything but true, false or nothing fails, as a
// response template that fails does.
func (rf refusal) test(d *templateData, limit int) (bool, error) {
	if rf.item != nil && !matcher.ContainsJSON(rf.item, d.Item) {
		return false, nil
	}
	if rf.holds == nil {
		return true, nil
	}
	b := renderBuffer{max: limit}
	if err := rf.holds.Execute(&b, d); err != nil {
		return false, renderError("when.holds", limit, err)
	}
	switch v := strings.TrimSpace(b.String()); v {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	default:
		if len(v) > 80 {
			v = v[:80] + "…"
		}
		return false, fmt.Errorf("%w: when.holds: rendered %q; want true or false", errTemplate, v)
	}
}
