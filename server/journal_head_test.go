package server

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

// headStore is the memory store with a journal that checks the
// pre-encoded head of each answer it is handed (EntryResponse.HeadersEncoded)
// against the header map it stands for, and counts the entries that
// carried one, by path.
type headStore struct {
	state.Store
	j *headJournal
}

func (s headStore) Journal() state.Journal { return s.j }

type headJournal struct {
	state.Journal
	mu      sync.Mutex // guards encoded and wrong
	encoded map[string]int
	wrong   []string
}

func (j *headJournal) Append(ctx context.Context, e *state.Entry) error {
	if r := e.Response; r != nil && r.HeadersEncoded != nil {
		// What the journal keeps from the bytes, and from the map: one
		// scratch journal decodes both.
		scratch := state.NewMemory(state.Options{}).Journal()
		walked := *e
		wr := *r
		wr.HeadersEncoded = nil
		walked.Response = &wr
		for _, x := range []*state.Entry{e, &walked} {
			c := *x
			if err := scratch.Append(ctx, &c); err != nil {
				return err
			}
		}
		got, _ := scratch.Entries(ctx, 0)
		j.mu.Lock()
		j.encoded[e.Path]++
		if !reflect.DeepEqual(got[0].Response.Headers, got[1].Response.Headers) {
			j.wrong = append(j.wrong, e.Path)
		}
		j.mu.Unlock()
	}
	return j.Journal.Append(ctx, e)
}

// TestJournalStaticHead: a static answer's head goes to the journal
// encoded once, when its route was compiled, rather than walked on every
// request; the journal keeps the same fields either way. It is used only
// when the answer goes out with that head alone: not with a CORS field
// beside it, not for a templated answer, and not for one with a field
// the journal redacts (Set-Cookie), whose encoding would depend on
// --journal-secrets.
func TestJournalStaticHead(t *testing.T) {
	t.Parallel()
	mem := state.NewMemory(state.Options{})
	j := &headJournal{Journal: mem.Journal(), encoded: map[string]int{}}
	_, hs, _ := serveYAML(t, Options{State: headStore{Store: mem, j: j}}, `
cors: { origins: ["http://localhost:*"], methods: [GET] }
routes:
  - { method: GET, path: /static, respond: { status: 200, headers: { X-Answer: a-1, Vary: [Accept, Origin] }, body: { ok: true } } }
  - { method: GET, path: /cookie, respond: { status: 200, headers: { Set-Cookie: "sid=s3cret" }, body: { ok: true } } }
  - { method: GET, path: /templated, respond: { status: 200, template: true, body: { call: '{{ .Call }}' } } }
  - name: idempotent
    method: POST
    path: /payments
    idempotency: { key: header.Idempotency-Key }
    respond: { status: 201, headers: { Location: /payments/pay_1 }, body: { id: pay_1 } }
`)
	do(t, "GET", hs.URL+"/static", "")
	do(t, "GET", hs.URL+"/static", "", "Origin", "http://localhost:5173") // CORS fields beside the answer's
	do(t, "GET", hs.URL+"/cookie", "")
	do(t, "GET", hs.URL+"/templated", "")
	do(t, "POST", hs.URL+"/payments", `{"a":1}`, "Content-Type", jsonCT, "Idempotency-Key", "k-1")
	do(t, "POST", hs.URL+"/payments", `{"a":1}`, "Content-Type", jsonCT, "Idempotency-Key", "k-1") // the replay: the stored head
	j.mu.Lock()
	want := map[string]int{"/static": 1, "/payments": 1}
	if !reflect.DeepEqual(j.encoded, want) {
		t.Errorf("entries with an encoded head, by path: %v, want %v", j.encoded, want)
	}
	if len(j.wrong) > 0 {
		t.Errorf("encoded heads that decode to other fields than the answer's: %v", j.wrong)
	}
	j.mu.Unlock()
	// What the journal kept is what was sent (Date aside, which net/http
	// adds after it).
	entries, err := mem.Journal().Entries(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	sent := do(t, "GET", hs.URL+"/static", "").header
	sent.Del("Date")
	if got := entries[0].Response.Headers; !reflect.DeepEqual(http.Header(got), sent) {
		t.Errorf("journaled head %v, sent %v", got, sent)
	}
	if got := entries[1].Response.Headers["Access-Control-Allow-Origin"]; len(got) != 1 {
		t.Errorf("CORS request: journaled head %v, want its Access-Control-Allow-Origin", entries[1].Response.Headers)
	}
}
