package statetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// journal checks the request journal: IDs, the cap, Clear, Wait.
func (h *harness) journal(t *testing.T) {
	t.Run("AppendAndRead", func(t *testing.T) {
		s, _ := h.open(t, state.Options{})
		j := s.Journal()
		for i := range 3 {
			e := &state.Entry{Method: "POST", Path: fmt.Sprintf("/p/%d", i), Body: []byte(`{"a":1}`), BodySize: 7,
				Headers: map[string][]string{"Idempotency-Key": {"k"}}, Status: 201, Route: "r", Matched: true}
			must(t, j.Append(ctx, e))
			if e.ID != int64(i+1) {
				t.Fatalf("Append set ID %d, want %d", e.ID, i+1)
			}
		}
		all, err := j.Entries(ctx, 0)
		must(t, err)
		if len(all) != 3 || all[0].Path != "/p/0" || all[2].Path != "/p/2" {
			t.Fatalf("Entries(0) = %+v", all)
		}
		if got := all[1]; got.Headers["Idempotency-Key"][0] != "k" || string(got.Body) != `{"a":1}` || got.Status != 201 || !got.Matched {
			t.Errorf("entry not kept as appended: %+v", got)
		}
		later, err := j.Entries(ctx, 2)
		must(t, err)
		if len(later) != 1 || later[0].ID != 3 {
			t.Errorf("Entries(2) = %+v, want only ID 3", later)
		}
		none, err := j.Entries(ctx, 3)
		must(t, err)
		if len(none) != 0 {
			t.Errorf("Entries(3) = %+v, want none", none)
		}
	})
	t.Run("Redact", func(t *testing.T) {
		s, _ := h.open(t, state.Options{})
		j := s.Journal()
		req := map[string][]string{"Authorization": {"Bearer sk_1", "Basic b"}, "Accept": {"*/*"}}
		resp := map[string][]string{"Set-Cookie": {"sid=1"}, "Content-Type": {"application/json"}}
		e := &state.Entry{Method: "GET", Path: "/p", Headers: req, Status: 200, Redact: secretRedactor{},
			Response: &state.EntryResponse{Status: 200, Headers: resp}}
		must(t, j.Append(ctx, e))
		all, err := j.Entries(ctx, 0)
		must(t, err)
		if len(all) != 1 || all[0].Response == nil {
			t.Fatalf("Entries(0) = %+v", all)
		}
		got := all[0]
		if want := []string{"hidden:Bearer sk_1", "hidden:Basic b"}; !reflect.DeepEqual(got.Headers["Authorization"], want) {
			t.Errorf("kept Authorization %q, want %q", got.Headers["Authorization"], want)
		}
		if want := []string{"hidden:sid=1"}; !reflect.DeepEqual(got.Response.Headers["Set-Cookie"], want) {
			t.Errorf("kept the answer's Set-Cookie %q, want %q", got.Response.Headers["Set-Cookie"], want)
		}
		if got.Headers["Accept"][0] != "*/*" || got.Response.Headers["Content-Type"][0] != "application/json" {
			t.Errorf("a header that is no secret changed: %v, %v", got.Headers, got.Response.Headers)
		}
		if got.Redact != nil {
			t.Errorf("an entry read back has a Redactor")
		}
		// The caller's maps are left as they were.
		if req["Authorization"][0] != "Bearer sk_1" || resp["Set-Cookie"][0] != "sid=1" {
			t.Errorf("Append changed the appended maps: %v, %v", req, resp)
		}
	})
	t.Run("Pages", func(t *testing.T) {
		s, _ := h.open(t, state.Options{JournalSize: 4})
		j := s.Journal()
		for i := range 6 {
			must(t, j.Append(ctx, &state.Entry{Path: fmt.Sprintf("/%d", i)}))
		}
		var got []int64
		for after := int64(0); ; {
			page, err := state.EntriesPage(ctx, j, after, 3)
			must(t, err)
			if len(page) > 3 {
				t.Fatalf("a page of 3 holds %v", entryIDs(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, entryIDs(page)...)
			after = page[len(page)-1].ID
		}
		if fmt.Sprint(got) != "[3 4 5 6]" {
			t.Errorf("pages of 3 after 6 appends with a cap of 4: %v, want [3 4 5 6]", got)
		}
		if _, ok := j.(state.JournalPager); !ok {
			t.Errorf("%T reads a page as the whole journal", j)
		}
	})
	t.Run("EncodedHeaders", func(t *testing.T) {
		// An answer's head handed over encoded (the server's static
		// answers) reads back as the map it encodes, in every store,
		// redacted as the entry's Redact says; the caller's bytes may be
		// reused once Append returns.
		s, _ := h.open(t, state.Options{})
		j := s.Journal()
		head := map[string][]string{"Content-Type": {"application/json"}, "Vary": {"Accept", "Origin"}, "X-Empty": {""}}
		enc := state.EncodeHeaders(nil, head, nil)
		e := state.Entry{Method: "GET", Path: "/static", Headers: map[string][]string{"Accept": {"*/*"}}, Status: 200,
			Response: &state.EntryResponse{Status: 200, Headers: head, HeadersEncoded: enc}}
		must(t, j.Append(ctx, &e))
		clear(enc)
		got, err := j.Entries(ctx, 0)
		must(t, err)
		if len(got) != 1 || got[0].Response == nil || !reflect.DeepEqual(got[0].Response.Headers, head) {
			t.Fatalf("entries %+v, want one whose answer has the head %v", got, head)
		}
		if got[0].Response.HeadersEncoded != nil {
			t.Errorf("an entry read back has HeadersEncoded")
		}
	})
	t.Run("EveryFieldKept", func(t *testing.T) {
		// Every field comes back as appended, and Append copies what it
		// keeps: the caller reuses its header map and body buffer for the
		// next request (the server does).
		s, _ := h.open(t, state.Options{})
		j := s.Journal()
		at := time.Date(2026, 12, 3, 17, 0, 0, 123_000_000, time.UTC)
		want := state.Entry{
			Time: at, Method: "POST", Path: "/v1/charges/ch_1", Query: "expand=customer&x=%20",
			Headers: map[string][]string{"Idempotency-Key": {"k-1"}, "Accept": {"a", "b"}, "X-Empty": {""}},
			Body:    []byte("{\"amount\":9800}\x00\xff"), BodySize: 4096, BodyTruncated: true,
			Route: "create charge", Matched: false, CatchAll: true,
			NearMisses: []state.NearMiss{{Route: "get charge", Reason: "method POST, want GET"}, {Route: "", Reason: ""}},
			Status:     201, DelayMs: 1.5, Fault: "connection-reset", FaultAfter: "processing", Idempotency: "new",
			Violations: []string{"body: amount: required", "query: x: bad"}, DurationMs: 2.25, Version: 7,
			Session: "checkout-tests", Proxied: true, Upstream: "http://127.0.0.1:1", UpstreamStatus: 502, UpstreamMs: 3.5,
			State: &state.StateMove{Name: "order", Key: "ch_1", From: "Started", To: "paid"},
			Response: &state.EntryResponse{
				Status: 201, Headers: map[string][]string{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}, "X-Empty": {""}},
				Body: []byte("{\"id\":\"ch_1\"}\x00\xfe"), BodySize: 8192, BodyTruncated: true, Lost: true, Streamed: true,
			},
		}
		// Every field of Entry and of its Response is set above, so a
		// field added later and not kept by a store fails here. Redact is
		// applied, not kept (the Redact case); HeadersEncoded is Headers
		// in another form, read back as Headers (the EncodedHeaders case).
		for _, v := range []reflect.Value{reflect.ValueOf(want), reflect.ValueOf(*want.Response)} {
			for i := range v.NumField() {
				if name := v.Type().Field(i).Name; name != "ID" && name != "Matched" && name != "Redact" && name != "HeadersEncoded" && v.Field(i).IsZero() {
					t.Fatalf("EveryFieldKept sets no %s.%s: set it, and keep it in every store", v.Type().Name(), name)
				}
			}
		}
		e := want
		e.Headers = cloneHeaders(want.Headers)
		e.Body = append([]byte(nil), want.Body...)
		resp := *want.Response
		resp.Headers = cloneHeaders(want.Response.Headers)
		resp.Body = append([]byte(nil), want.Response.Body...)
		e.Response = &resp
		must(t, j.Append(ctx, &e))
		want.ID = e.ID
		e.Headers["Idempotency-Key"][0] = "changed"
		e.Headers["Added"] = []string{"x"}
		e.Body[0] = 'X'
		resp.Headers["Set-Cookie"][0] = "changed"
		resp.Headers["Added"] = []string{"x"}
		resp.Body[0] = 'X'
		resp.Status = 500
		all, err := j.Entries(ctx, 0)
		must(t, err)
		if len(all) != 1 {
			t.Fatalf("%d entries, want 1", len(all))
		}
		got := all[0]
		if !got.Time.Equal(want.Time) {
			t.Errorf("Time = %v, want %v", got.Time, want.Time)
		}
		got.Time = want.Time
		if !reflect.DeepEqual(got, want) {
			t.Errorf("entry not kept as appended:\n got %+v\nwant %+v", got, want)
		}
		if got.Response != nil && !reflect.DeepEqual(*got.Response, *want.Response) {
			t.Errorf("response not kept as appended:\n got %+v\nwant %+v", *got.Response, *want.Response)
		}
		// Headers nil and empty read differently in JSON (null, {}); an
		// entry without a response has none, one with an empty response
		// has it.
		must(t, j.Append(ctx, &state.Entry{Path: "/nil"}))
		must(t, j.Append(ctx, &state.Entry{Path: "/empty", Headers: map[string][]string{}, Response: &state.EntryResponse{Headers: map[string][]string{}}}))
		must(t, j.Append(ctx, &state.Entry{Path: "/nil-response-headers", Response: &state.EntryResponse{Status: 204}}))
		all, err = j.Entries(ctx, want.ID)
		must(t, err)
		if len(all) != 3 || all[0].Headers != nil || all[0].Response != nil || all[1].Headers == nil ||
			all[1].Response == nil || all[1].Response.Headers == nil || all[2].Response == nil || all[2].Response.Headers != nil || all[2].Response.Status != 204 {
			t.Errorf("nil and empty headers and responses: got %+v", all)
		}
	})
	t.Run("Cap", func(t *testing.T) {
		s, _ := h.open(t, state.Options{JournalSize: 3})
		j := s.Journal()
		for i := range 5 {
			must(t, j.Append(ctx, &state.Entry{Path: fmt.Sprintf("/%d", i)}))
		}
		all, err := j.Entries(ctx, 0)
		must(t, err)
		if len(all) != 3 || all[0].ID != 3 || all[2].ID != 5 {
			t.Fatalf("after 5 appends with a cap of 3: %+v, want IDs 3..5", entryIDs(all))
		}
		from, err := j.Entries(ctx, 1) // older than anything kept
		must(t, err)
		if len(from) != 3 {
			t.Errorf("Entries(1) = IDs %v, want 3..5", entryIDs(from))
		}
	})
	t.Run("ClearKeepsIDs", func(t *testing.T) {
		s, _ := h.open(t, state.Options{})
		j := s.Journal()
		must(t, j.Append(ctx, &state.Entry{Path: "/a"}))
		must(t, j.Append(ctx, &state.Entry{Path: "/b"}))
		must(t, j.Clear(ctx))
		all, err := j.Entries(ctx, 0)
		must(t, err)
		if len(all) != 0 {
			t.Fatalf("Entries after Clear = %v", entryIDs(all))
		}
		e := &state.Entry{Path: "/c"}
		must(t, j.Append(ctx, e))
		if e.ID != 3 {
			t.Errorf("ID after Clear = %d, want 3 (IDs are never reused)", e.ID)
		}
	})
	t.Run("StoreResetClears", func(t *testing.T) {
		s, _ := h.open(t, state.Options{})
		must(t, s.Journal().Append(ctx, &state.Entry{Path: "/a"}))
		must(t, s.Reset(ctx))
		all, err := s.Journal().Entries(ctx, 0)
		must(t, err)
		if len(all) != 0 {
			t.Errorf("Entries after Reset = %v", entryIDs(all))
		}
	})
	t.Run("Wait", func(t *testing.T) {
		s, _ := h.open(t, state.Options{})
		j := s.Journal()
		must(t, j.Append(ctx, &state.Entry{Path: "/a"}))
		// An entry above after exists already: no waiting.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		must(t, j.Wait(wctx, 0))
		done := make(chan error, 1)
		go func() { done <- j.Wait(wctx, 1) }()
		select {
		case err := <-done:
			t.Fatalf("Wait(1) returned %v before entry 2 existed", err)
		default:
		}
		must(t, j.Append(ctx, &state.Entry{Path: "/b"}))
		select {
		case err := <-done:
			must(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("Wait(1) still waiting 30s after entry 2 was appended")
		}
		gone, stop := context.WithCancel(ctx)
		go func() { done <- j.Wait(gone, 2) }()
		stop()
		select {
		case err := <-done:
			if err == nil {
				t.Error("Wait returned nil for a cancelled context and no new entry")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Wait ignored its context")
		}
	})
	t.Run("WaitAfterClear", func(t *testing.T) {
		// A live tail that finds nothing new after Wait must not be sent
		// straight back: Wait waits for an entry that exists, not for
		// IDs past after that were cleared.
		s, _ := h.open(t, state.Options{})
		j := s.Journal()
		must(t, j.Append(ctx, &state.Entry{Path: "/a"}))
		must(t, j.Clear(ctx))
		// Not a context already ended, which a remote store could report
		// before asking anything: one that ends while it waits.
		gone, stop := context.WithTimeout(ctx, 300*time.Millisecond)
		defer stop()
		if err := j.Wait(gone, 0); err == nil {
			t.Fatal("Wait(0) returned nil after Clear, with no entry kept: a tail would spin")
		}
		done := make(chan error, 1)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		go func() { done <- j.Wait(wctx, 0) }()
		must(t, j.Append(ctx, &state.Entry{Path: "/b"}))
		select {
		case err := <-done:
			must(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("Wait(0) still waiting 30s after an entry was appended")
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		s, _ := h.open(t, state.Options{JournalSize: 1000})
		j := s.Journal()
		var wg sync.WaitGroup
		var mu sync.Mutex
		given := map[int64]string{} // the ID Append set, and the entry's path
		for g := range 10 {
			wg.Go(func() {
				for i := range 50 {
					e := &state.Entry{Path: fmt.Sprintf("/%d/%d", g, i)}
					if err := j.Append(ctx, e); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					given[e.ID] = e.Path
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(given) != 500 {
			t.Fatalf("Append gave %d distinct IDs to 500 entries", len(given))
		}
		all, err := j.Entries(ctx, 0)
		must(t, err)
		if len(all) != 500 {
			t.Fatalf("%d entries, want 500", len(all))
		}
		for i, e := range all {
			if e.ID != int64(i+1) {
				t.Fatalf("entry %d has ID %d: IDs must be 1..500 in order", i, e.ID)
			}
			if given[e.ID] != e.Path {
				t.Fatalf("entry %d is %s, but Append gave that ID to %s", e.ID, e.Path, given[e.ID])
			}
		}
	})
}

func entryIDs(es []state.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// cloneHeaders copies h, values included.
func cloneHeaders(h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// secretRedactor is a state.Redactor for the tests: Authorization and
// Set-Cookie are secrets, their values kept as "hidden:" and the value.
type secretRedactor struct{}

func (secretRedactor) Secret(name string) bool {
	return name == "Authorization" || name == "Set-Cookie"
}

func (secretRedactor) Redact(v string) string { return "hidden:" + v }
