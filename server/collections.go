package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// errPage is a paging parameter of a paged list: that is not usable: a
// 400, as Stripe answers.
var errPage = errors.New("bad paging parameter")

// errStore wraps a failure of the state store itself (not ErrFull): the
// answer is a 503, as for idempotency keys.
var errStore = errors.New("the state store did not answer")

// templateResponse is .Response in the id template of save: the answer
// just rendered.
type templateResponse struct {
	Status  int
	Headers http.Header
	Body    string
	// JSON is the body parsed when it is an object, else an empty object.
	JSON map[string]any
}

// parseItem decodes a stored body for templates: numbers stay as written
// (json.Number), and a body that is not JSON is its text.
func parseItem(b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(b)
	}
	return v
}

// joinItems is the JSON array of the items as saved.
func joinItems(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// renderID renders an id template of save:, load: or delete:. An id that
// renders empty names nothing.
func renderID(t *template.Template, d *templateData, field string) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("%w: %s.id: %s", errTemplate, field, templateMessage(err))
	}
	return b.String(), nil
}

// runOp runs the load, list or delete of p and puts what it found into d.
// It reports false when load or delete finds no item. With readOnly (a
// fault at arrival, which changes nothing) a delete finds its item and
// leaves it.
func (s *Server) runOp(ctx context.Context, p *prepared, d *templateData, readOnly bool) (bool, error) {
	ref := p.src.Ref
	cols := s.state.Collections()
	d.collection = ref.Collection
	coll := scopedCollection(ref.Collection, ref.Scope, d.Request.Headers)
	if p.src.Op == scenarios.OpList {
		items, _, err := cols.List(ctx, coll, 0, 0)
		if err != nil {
			return false, fmt.Errorf("%w: %v", errStore, err)
		}
		if ref.Newest {
			slices.Reverse(items) // List's slice is this request's own
		}
		// A route that names an operation lists as the operation's
		// generated list would: narrowed by the filters the request sets
		// (GET /v1/events?type=customer.*), the cursors placed among
		// all items first.
		var narrow func([]state.Item) []state.Item
		if p.op != nil {
			q := d.Request.Query
			narrow = func(items []state.Item) []state.Item { return p.op.Narrow(items, q) }
		}
		if ref.Paged {
			if items, d.HasMore, err = page(items, d.Request.Query, ref.Collection, narrow, p.op != nil); err != nil {
				return false, err
			}
		} else if narrow != nil {
			items = narrow(items)
		}
		d.Items, d.items = make([]any, len(items)), make([][]byte, len(items))
		for i, it := range items {
			d.Items[i], d.items[i] = parseItem(it.Body), it.Body
		}
		return true, nil
	}
	id, err := renderID(ref.ID, d, string(p.src.Op))
	if err != nil {
		return false, err
	}
	d.id = id
	if id == "" {
		return false, nil
	}
	body, ok, err := cols.Load(ctx, coll, id)
	if err != nil {
		return false, fmt.Errorf("%w: %v", errStore, err)
	}
	if !ok {
		return false, nil
	}
	if p.src.Op == scenarios.OpDelete && !readOnly {
		// Two deletes of one item race; the one that removes it wins and
		// the other finds nothing, as on a real API.
		if ok, err = cols.Delete(ctx, coll, id); err != nil || !ok {
			if err != nil {
				err = fmt.Errorf("%w: %w", errStore, err)
			}
			return false, err
		}
	}
	d.item, d.Item = body, parseItem(body)
	return true, nil
}

// page cuts a paged list: as Stripe does. ?limit= is 1 to 100 (default
// 10); ?starting_after= gives the items after that id, ?ending_before=
// the items before it (the last limit of them); more says whether items
// lie beyond the page in the direction of travel. narrow, when set, keeps
// the items a filter keeps, after the cursor is placed among them all.
//
// lenient, for a route that names an operation, takes a limit outside 1
// to 100 as the operation's generated list does, as the default 10 (the
// operation checked that it is an integer), rather than refusing it with
// a problem its clients cannot read.
func page(items []state.Item, q url.Values, collection string, narrow func([]state.Item) []state.Item, lenient bool) (out []state.Item, more bool, err error) {
	if narrow == nil {
		narrow = func(items []state.Item) []state.Item { return items }
	}
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err == nil && n >= 1 && n <= 100:
			limit = n
		case !lenient:
			return nil, false, fmt.Errorf("%w: ?limit= takes a whole number from 1 to 100, got %q", errPage, v)
		}
	}
	index := func(param string) (int, error) {
		id := q.Get(param)
		for i, it := range items {
			if it.ID == id {
				return i, nil
			}
		}
		return 0, &cursorError{param: param, id: id, collection: collection}
	}
	switch {
	case q.Has("starting_after") && q.Has("ending_before"):
		return nil, false, &cursorError{param: "ending_before", other: "starting_after"}
	case q.Has("ending_before"):
		end, err := index("ending_before")
		if err != nil {
			return nil, false, err
		}
		window := narrow(items[:end])
		start := max(0, len(window)-limit)
		return window[start:], start > 0, nil
	case q.Has("starting_after"):
		i, err := index("starting_after")
		if err != nil {
			return nil, false, err
		}
		items = items[i+1:]
	}
	items = narrow(items)
	if len(items) > limit {
		return items[:limit], true, nil
	}
	return items, false, nil
}

// cursorError is a paged list's cursor naming no item (id), or, with
// other, two cursors at once: a 400 (errPage), answered as the route's
// operation answers it when the route names one (CursorError).
type cursorError struct {
	param, id, collection, other string
}

func (e *cursorError) Error() string {
	if e.other != "" {
		return fmt.Sprintf("%v: ?%s= and ?%s= exclude each other", errPage, e.other, e.param)
	}
	return fmt.Sprintf("%v: ?%s= names no item of collection %q: %q", errPage, e.param, e.collection, e.id)
}

func (e *cursorError) Unwrap() error { return errPage }

// operate renders the answer of p into rec: it runs the collection
// operation first, and answers a load or delete that finds nothing with
// the response's missing: answer or a 404 problem. It saves nothing; commit
// saves once it knows the answer is produced (see save). readOnly is
// runOp's.
func (s *Server) operate(ctx context.Context, rec *recorder, p *prepared, d *templateData, readOnly bool) error {
	if p.src.Op != "" {
		found, err := s.runOp(ctx, p, d, readOnly)
		var ce *cursorError
		if errors.As(err, &ce) && p.op != nil {
			status, contentType, body := p.op.CursorError(d.in.HTTP, ce.param, ce.id, ce.other)
			rec.header["Content-Type"] = []string{contentType}
			rec.WriteHeader(status)
			_, _ = rec.Write(body)
			return nil
		}
		if err != nil {
			return err
		}
		if !found {
			if p.op != nil && p.src.Op == scenarios.OpLoad {
				// A route that names an operation and loads from a
				// collection of its own: an id the collection lacks is
				// the operation's to answer (its 404, or an object
				// generated under unknownIds: generate).
				d.opMissing = true
				return p.generated(rec, s.opts.MaxTemplateOutput, d)
			}
			if p.missing != nil {
				return p.missing.render(rec, s.opts.MaxTemplateOutput, d)
			}
			writeProblem(rec, newProblem(http.StatusNotFound, fmt.Sprintf("No item %q in collection %q.", d.id, d.collection)))
			return nil
		}
	}
	return p.render(rec, s.opts.MaxTemplateOutput, d)
}

// undoItem is an item commit stored for a request, to be taken back
// (unsave) when a later save: entry of the same answer fails: before is
// the item as it was, nil for one the request created.
type undoItem struct {
	collection, id string
	before         []byte
}

// unsave takes back the items saved, newest first: those created are
// deleted, those merged into get their bodies back. The request is
// answered a 507 or a 503 and its key released, so that its retry saves
// them again once: without this, each retry of an order whose receipt
// did not fit left one more order behind. An item replaced whole keeps
// the new body (what it held is not read first). Best effort: a store
// that fails here fails the answer already.
func (s *Server) unsave(ctx context.Context, undo []undoItem) {
	cols := s.state.Collections()
	for i := len(undo) - 1; i >= 0; i-- {
		it := undo[i]
		var err error
		if it.before == nil {
			_, err = cols.Delete(ctx, it.collection, it.id)
		} else {
			_, err = cols.Save(ctx, it.collection, it.id, it.before)
		}
		if err != nil {
			s.log.Warn("an item saved for a request that failed could not be taken back", "collection", it.collection, "id", it.id, "error", err.Error())
		}
	}
}

// save stores the answer in rec as the item save: names. The id template
// sees the answer as .Response. An item it creates is added to undo.
func (s *Server) save(ctx context.Context, p *prepared, d *templateData, rec *recorder, undo *[]undoItem) error {
	ref := p.src.Save
	body := rec.body
	d.seeResponse(rec)
	id, err := renderID(ref.ID, d, "save")
	if err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%w: save.id: rendered empty; an item needs an id", errTemplate)
	}
	if !json.Valid(body) {
		return fmt.Errorf("%w: save: the body is not JSON, and collections hold JSON", errTemplate)
	}
	coll := scopedCollection(ref.Collection, ref.Scope, d.Request.Headers)
	created, err := s.state.Collections().Save(ctx, coll, id, body)
	if err != nil {
		if errors.Is(err, state.ErrFull) {
			return fmt.Errorf("%w: item %q not saved in collection %q: the collections hold %d items, the limit (--max-collection-items)", err, id, ref.Collection, s.opts.MaxCollectionItems)
		}
		return fmt.Errorf("%w: %w", errStore, err)
	}
	if created {
		*undo = append(*undo, undoItem{collection: coll, id: id})
	}
	return nil
}

// seeResponse shows the answer in rec to the templates of save: as
// .Response, once: the operation's answer when an envelope wrapped it,
// as the route's events see it.
func (d *templateData) seeResponse(rec *recorder) {
	if d.Response != nil {
		return
	}
	status, body := rec.status, rec.body
	if d.wrapped {
		status, body = d.answeredStatus, d.answered
	}
	resp := &templateResponse{Status: status, Headers: rec.header, Body: string(body), JSON: map[string]any{}}
	if m, ok := parseItem(body).(map[string]any); ok {
		resp.JSON = m
	}
	d.Response = resp
}

// saveAlso saves the items of the save: entries of p that have a body of
// their own (scenarios.Response.Also), in the order written; an entry
// whose id renders empty saves nothing, so that an item may be made only
// when the answer calls for it, and one that merges lays its body on the
// stored item, and makes none. An entry with resource: saves where the
// route's OpenAPI document keeps that resource, starting from its
// fixture (ResourceBase) unless it merges, and the operation's
// answer is then expanded again, so that expand[] sees what was saved
// (the new subscription's latest_invoice). The items it creates, and
// those it merges into as they were, are added to undo, for unsave when
// one fails.
func (s *Server) saveAlso(ctx context.Context, p *prepared, d *templateData, rec *recorder, undo *[]undoItem) error {
	d.seeResponse(rec)
	cols := s.state.Collections()
	expand := false
	for _, ref := range p.src.Also {
		id, err := renderID(ref.ID, d, "save")
		if err != nil {
			return err
		}
		if id == "" {
			continue
		}
		body, err := renderJSON(ref.Body, "save.body", d, s.opts.MaxTemplateOutput)
		if err != nil {
			return err
		}
		name, coll := ref.Collection, scopedCollection(ref.Collection, ref.Scope, d.Request.Headers)
		if ref.Resource != "" {
			name, coll, expand = ref.Resource, p.op.ItemCollection(d.in.HTTP, ref.Resource, body), true
			if coll == "" {
				// A resource kept below its parent, and the body names
				// none (ItemCollection).
				return fmt.Errorf("%w: save: item %q of %s: its body names no parent to keep it under", errTemplate, id, name)
			}
			if base := p.op.ResourceBase(ref.Resource, id); base != nil && !ref.Merge {
				// Made as a create of it is: from the fixture, the
				// body laid on it.
				if body, err = mergeItem(base, body); err != nil {
					return fmt.Errorf("%w: save: item %q of %s: %v", errTemplate, id, name, err)
				}
			}
		}
		var stored []byte // the item as stored before a merge: for its events, and to take it back
		if ref.Merge {
			// Read, then written: as an operation's update, not one
			// atomic step with a concurrent write of the same item.
			var found bool
			stored, found, err = cols.Load(ctx, coll, id)
			if err != nil {
				return fmt.Errorf("%w: %w", errStore, err)
			}
			if !found {
				continue
			}
			if body, err = mergeItem(stored, body); err != nil {
				return fmt.Errorf("%w: save: item %q of collection %q: %v", errTemplate, id, name, err)
			}
		}
		created, err := cols.Save(ctx, coll, id, body)
		if err != nil {
			if errors.Is(err, state.ErrFull) {
				return fmt.Errorf("%w: item %q not saved in collection %q: the collections hold %d items, the limit (--max-collection-items)", err, id, name, s.opts.MaxCollectionItems)
			}
			return fmt.Errorf("%w: %w", errStore, err)
		}
		if len(ref.Events) > 0 {
			d.saved = append(d.saved, savedItem{ref.Events, stored, body})
		}
		switch {
		case created:
			*undo = append(*undo, undoItem{collection: coll, id: id})
		case stored != nil:
			*undo = append(*undo, undoItem{collection: coll, id: id, before: stored})
		}
	}
	if !expand || d.wrapped {
		return nil
	}
	_, ox := d.opExchange()
	body, err := p.op.Expand(ctx, ox, rec.body)
	if err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	rec.body = body
	rec.header["Content-Length"] = []string{strconv.Itoa(len(body))}
	return nil
}

// mergeItem lays patch on the stored item: each field of patch replaces
// the item's, null included, and mappings merge. Numbers stay as written.
func mergeItem(stored, patch []byte) ([]byte, error) {
	item, ok := parseItem(stored).(map[string]any)
	if !ok {
		return nil, errors.New("the stored item is no JSON object, to lay a body on")
	}
	p, _ := parseItem(patch).(map[string]any)
	mergeInto(item, p)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the item was written: a URL's & stays
	if err := enc.Encode(item); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// mergeInto lays patch on dst in place, mappings merged.
func mergeInto(dst, patch map[string]any) {
	for k, v := range patch {
		if pm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, pm)
				continue
			}
		}
		dst[k] = v
	}
}

// scopedCollection is the stored collection a request with header h
// uses for the collection name of scope (scenarios.ItemRef.Scope): name
// itself, or with scope credential "name sk_test_1" for the API key h
// authenticates with, and "name sk_test_1 Stripe-Account=acct_1" with
// the scope's header (matcher.Owner; name alone for a request that
// carries none of it).
func scopedCollection(name string, scope scenarios.Scope, h http.Header) string {
	if o := matcher.Owner(scope, h); o != "" {
		return name + " " + o
	}
	return name
}
