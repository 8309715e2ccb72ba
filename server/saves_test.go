package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// savesFile makes an order and, beside it, a receipt of its own (save:
// entries with a body:) under a fresh id, and a gift note only when the
// order is a gift (an id that renders empty saves nothing). A refused
// order releases its key (idempotency: release) and saves nothing.
// Shipping an order lays its status on the stored order (merge: true).
const savesFile = `
routes:
  - name: refused order
    method: POST
    path: /orders
    priority: 1
    when: { body: { json: { amount: 0 } } }
    idempotency: { key: header.Idempotency-Key }
    respond:
      status: 400
      idempotency: release
      body: { error: nothing to pay }
      save:
        - { collection: receipts, scope: credential, id: rcpt_refused, body: { refused: true } }
  - name: create order
    method: POST
    path: /orders
    idempotency: { key: header.Idempotency-Key }
    respond:
      status: 201
      template: true
      body: { id: 'ord_{{ randomHex 8 }}', amount: '{{ .Request.JSON.amount }}' }
      save:
        - { collection: orders, scope: credential, id: '{{ .Response.JSON.id }}' }
        - collection: receipts
          scope: credential
          id: 'rcpt_{{ randomHex 8 }}'
          body: { order: '{{ .Response.JSON.id }}', amount: '{{ .Response.JSON.amount }}', status: '{{ .Response.Status }}' }
        - collection: gifts
          scope: credential
          id: '{{ if .Request.JSON.gift }}gift_{{ .Response.JSON.id }}{{ end }}'
          body: { order: '{{ .Response.JSON.id }}', note: '{{ .Request.JSON.gift }}' }
  - name: ship order
    method: POST
    path: /orders/{id}/ship
    respond:
      template: true
      body: { shipped: '{{ .Request.Vars.id }}' }
      save:
        - { collection: orders, scope: credential, merge: true, id: '{{ .Request.Vars.id }}', body: { status: shipped, tracking: { carrier: post } } }
  - { name: orders, method: GET, path: /orders, respond: { list: { collection: orders, scope: credential } } }
  - { name: receipts, method: GET, path: /receipts, respond: { list: { collection: receipts, scope: credential } } }
  - { name: gifts, method: GET, path: /gifts, respond: { list: { collection: gifts, scope: credential } } }
`

// TestSaveEntries: a response's save: entries with a body of their own
// store those items beside the answer, rendered from it (.Response), in
// the route's scope, when the answer is stored: an idempotent replay
// saves nothing again, an answer that releases its key saves nothing,
// and an entry whose id renders empty is skipped; one that merges
// updates the stored item, and makes none. The same with the memory
// store and with Redis.
func TestSaveEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) state.Store // nil: the memory store
	}{
		{"memory", nil},
		{"redis", func(t *testing.T) state.Store {
			rs := redistest.Start(t)
			st, err := redis.Open(context.Background(), rs.URL(), redis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts Options
			if tc.store != nil {
				opts.State = tc.store(t)
			}
			_, hs, _ := serveYAML(t, opts, savesFile)
			base := hs.URL
			alice, bob := []string{"Authorization", "Bearer sk_test_alice"}, []string{"Authorization", "Bearer sk_test_bob"}
			items := func(path string, who []string) []map[string]any {
				t.Helper()
				r := do(t, "GET", base+path, "", who...)
				var v []map[string]any
				if err := json.Unmarshal([]byte(r.body), &v); r.status != 200 || err != nil {
					t.Fatalf("GET %s: %d %s (%v)", path, r.status, r.body, err)
				}
				return v
			}
			order := func(key, body string) response {
				t.Helper()
				return do(t, "POST", base+"/orders", body, append([]string{"Content-Type", jsonCT, "Idempotency-Key", key}, alice...)...)
			}

			first := order("k1", `{"amount":9800}`)
			id, _ := first.json(t)["id"].(string)
			if first.status != 201 || !strings.HasPrefix(id, "ord_") {
				t.Fatalf("create: %d %s", first.status, first.body)
			}
			receipts := items("/receipts", alice)
			if len(receipts) != 1 || receipts[0]["order"] != id || receipts[0]["amount"] != float64(9800) || receipts[0]["status"] != float64(201) {
				t.Fatalf("receipts after the create: %v; want one of %s for 9800, status 201", receipts, id)
			}
			if got := items("/receipts", bob); len(got) != 0 {
				t.Errorf("another key's receipts: %v; want none (scope: credential)", got)
			}
			if got := items("/gifts", alice); len(got) != 0 {
				t.Errorf("gifts of an order that is none: %v; want none (the id rendered empty)", got)
			}

			again := order("k1", `{"amount":9800}`)
			if again.status != 201 || !replayed(again) || again.body != first.body {
				t.Fatalf("replay: %d %s %v; want the first answer replayed", again.status, again.body, again.header)
			}
			if got := items("/receipts", alice); len(got) != 1 {
				t.Errorf("receipts after a replay: %v; want still one (a replay saves nothing)", got)
			}

			refused := order("k2", `{"amount":0}`)
			if refused.status != 400 || replayed(refused) {
				t.Fatalf("refused: %d %s", refused.status, refused.body)
			}
			if got := items("/receipts", alice); len(got) != 1 {
				t.Errorf("receipts after a released answer: %v; want still one (idempotency: release saves nothing)", got)
			}
			if retried := order("k2", `{"amount":500,"gift":"happy birthday"}`); retried.status != 201 || replayed(retried) {
				t.Fatalf("corrected retry of the released key: %d %s; want a new order", retried.status, retried.body)
			} else {
				gid, _ := retried.json(t)["id"].(string)
				gifts := items("/gifts", alice)
				if len(gifts) != 1 || gifts[0]["order"] != gid || gifts[0]["note"] != "happy birthday" {
					t.Errorf("gifts: %v; want one for %s", gifts, gid)
				}
			}
			if got := items("/receipts", alice); len(got) != 2 {
				t.Errorf("receipts after a second order: %v; want two", got)
			}

			// merge: lays the body on the stored item, and makes none.
			if r := do(t, "POST", base+"/orders/"+id+"/ship", "", alice...); r.status != 200 {
				t.Fatalf("ship: %d %s", r.status, r.body)
			}
			do(t, "POST", base+"/orders/ord_never/ship", "", alice...)
			orders := items("/orders", alice)
			if len(orders) != 2 || orders[0]["id"] != id || orders[0]["amount"] != float64(9800) || orders[0]["status"] != "shipped" {
				t.Errorf("orders after shipping %s and ord_never: %v; want two, %s shipped with its amount kept", id, orders, id)
			} else if tr, _ := orders[0]["tracking"].(map[string]any); tr["carrier"] != "post" {
				t.Errorf("shipped order's tracking: %v; want the body's mapping", orders[0]["tracking"])
			}
		})
	}
}

// TestSaveEntryEvents: a save: entry's events: are sent when it saves,
// about the item saved: a new item's as it is, a merged one's as merged,
// a *.updated one with the fields the merge changed, with their values
// before, as previous_attributes; an entry that saves nothing (no item
// to merge on, an id rendered empty) sends none, nor does a replay.
func TestSaveEntryEvents(t *testing.T) {
	t.Parallel()
	_, hs, _ := serveYAML(t, Options{}, `
webhooks: { collection: events }
routes:
  - name: create order
    method: POST
    path: /orders
    idempotency: { key: header.Idempotency-Key }
    respond:
      status: 201
      template: true
      body: { id: 'ord_{{ randomHex 8 }}' }
      save:
        - collection: orders
          id: '{{ .Response.JSON.id }}'
          body: { id: '{{ .Response.JSON.id }}', status: open, carrier: none }
          events: [{ type: order.created }]
        - collection: gifts
          id: '{{ if .Request.JSON.gift }}gift_{{ .Response.JSON.id }}{{ end }}'
          body: { order: '{{ .Response.JSON.id }}' }
          events: [{ type: gift.created }]
  - name: ship order
    method: POST
    path: /orders/{id}/ship
    respond:
      template: true
      body: { shipped: '{{ .Request.Vars.id }}' }
      save:
        - collection: orders
          merge: true
          id: '{{ .Request.Vars.id }}'
          body: { status: shipped, carrier: post }
          events: [{ type: order.updated }, { type: order.shipped_by_post, when: { json: { carrier: post } } }, { type: order.never, when: { json: { carrier: ship } } }]
`)
	made := do(t, "POST", hs.URL+"/orders", `{}`, "Content-Type", jsonCT, "Idempotency-Key", "k1")
	id, _ := made.json(t)["id"].(string)
	if again := do(t, "POST", hs.URL+"/orders", `{}`, "Content-Type", jsonCT, "Idempotency-Key", "k1"); made.status != 201 || !replayed(again) {
		t.Fatalf("create, replay: %d %s, %v", made.status, made.body, again.header)
	}
	if got := do(t, "POST", hs.URL+"/orders/"+id+"/ship", ""); got.status != 200 {
		t.Fatalf("ship: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", hs.URL+"/orders/ord_none/ship", ""); got.status != 200 {
		t.Fatalf("ship an order never made: %d %s", got.status, got.body)
	}
	var kept struct {
		Items []struct {
			Body struct {
				Type string
				Data struct {
					Object   map[string]any
					Previous map[string]any `json:"previous_attributes"`
				}
			}
		}
	}
	events := do(t, "GET", hs.URL+"/__admin/collections/events", "")
	if err := json.Unmarshal([]byte(events.body), &kept); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, it := range kept.Items {
		types = append(types, it.Body.Type)
	}
	if strings.Join(types, " ") != "order.created order.updated order.shipped_by_post" {
		t.Fatalf("events %v; want order.created (once, not for the replay; no gift), order.updated and order.shipped_by_post (not for an order never made)", types)
	}
	created, updated := kept.Items[0].Body.Data, kept.Items[1].Body.Data
	if created.Object["id"] != id || created.Object["status"] != "open" || created.Previous != nil {
		t.Errorf("order.created: %v, previous %v; want the new order, open, and no previous attributes", created.Object, created.Previous)
	}
	if updated.Object["id"] != id || updated.Object["status"] != "shipped" || updated.Object["carrier"] != "post" ||
		len(updated.Previous) != 2 || updated.Previous["status"] != "open" || updated.Previous["carrier"] != "none" {
		t.Errorf("order.updated: %v, previous %v; want the order as merged, and previous_attributes {status: open, carrier: none}", updated.Object, updated.Previous)
	}
}

// TestSaveEntriesTakenBack: when a save: entry does not fit
// (--max-collection-items: a 507, the key released), the items the
// answer saved before it are taken back, so that the client, told that
// nothing was made, finds nothing made, and its retry, once there is
// room, makes one order and not one more per failed try; an item merged
// into gets its body back. The same with the memory store and with Redis.
func TestSaveEntriesTakenBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) state.Store // nil: the memory store
	}{
		{"memory", nil},
		{"redis", func(t *testing.T) state.Store {
			rs := redistest.Start(t)
			st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Options: state.Options{MaxItems: 3}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{MaxCollectionItems: 3}
			if tc.store != nil {
				opts.State = tc.store(t)
			}
			_, hs, _ := serveYAML(t, opts, savesFile+`
  - name: ship with a note
    method: POST
    path: /orders/{id}/{status}
    respond:
      template: true
      body: { done: '{{ .Request.Vars.id }}' }
      save:
        - { collection: orders, scope: credential, merge: true, id: '{{ .Request.Vars.id }}', body: { status: '{{ .Request.Vars.status }}' } }
        - { collection: notes, id: 'note_{{ .Request.Vars.status }}', body: { order: '{{ .Request.Vars.id }}' } }
  - { name: delete order, method: DELETE, path: '/orders/{id}', respond: { delete: { collection: orders, id: '{{ .Request.Vars.id }}' } } }
  - { name: delete note, method: DELETE, path: '/notes/{id}', respond: { delete: { collection: notes, id: '{{ .Request.Vars.id }}' } } }
`)
			list := func(path string) []map[string]any {
				t.Helper()
				var v []map[string]any
				if r := do(t, "GET", hs.URL+path, ""); r.status != 200 || json.Unmarshal([]byte(r.body), &v) != nil {
					t.Fatalf("GET %s: %d %s", path, r.status, r.body)
				}
				return v
			}
			order := func(key string) response {
				t.Helper()
				return do(t, "POST", hs.URL+"/orders", `{"amount":5}`, "Content-Type", jsonCT, "Idempotency-Key", key)
			}
			first := order("k0") // an order and its receipt: two items of three
			id, _ := first.json(t)["id"].(string)
			if first.status != 201 {
				t.Fatalf("the first order: %d %s", first.status, first.body)
			}
			for range 3 { // its order fits, its receipt does not
				if r := order("k1"); r.status != 507 {
					t.Fatalf("an order past the bound: %d %s; want a 507", r.status, r.body)
				}
			}
			if orders := list("/orders"); len(orders) != 1 || orders[0]["id"] != id {
				t.Fatalf("orders after three 507s: %v; want the first alone", orders)
			}

			if r := do(t, "POST", hs.URL+"/orders/"+id+"/shipped", ""); r.status != 200 { // its note is the third item
				t.Fatalf("shipping with a note: %d %s", r.status, r.body)
			}
			if r := do(t, "POST", hs.URL+"/orders/"+id+"/returned", ""); r.status != 507 {
				t.Fatalf("returning with a note past the bound: %d %s; want a 507", r.status, r.body)
			}
			if orders := list("/orders"); len(orders) != 1 || orders[0]["status"] != "shipped" {
				t.Errorf("orders: %v; want the first, shipped, not returned", orders)
			}

			do(t, "DELETE", hs.URL+"/orders/"+id, "")
			do(t, "DELETE", hs.URL+"/notes/note_shipped", "")
			if r := order("k1"); r.status != 201 || replayed(r) {
				t.Fatalf("the retry with room: %d %s", r.status, r.body)
			}
			if orders := list("/orders"); len(orders) != 1 {
				t.Errorf("orders after the retry: %v; want the retried one alone", orders)
			}
		})
	}
}
