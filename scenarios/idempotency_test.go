package scenarios

import (
	"reflect"
	"testing"
	"time"
)

func TestIdempotencyBlock(t *testing.T) {
	t.Parallel()
	set := loadOne(t, `
defaults:
  idempotency: { key: header.Idempotency-Key, required: true }
routes:
  - name: full
    method: POST
    path: /accounts/{acct}/reservations
    idempotency:
      key: header.idempotency-key
      scope: [header.Authorization, path.acct]
      group: reservations
      ttl: 90m
      inFlight: wait
      store: all
      replayHeader: x-replayed
      fingerprint: [body, method, query.mode]
      onClientAbort: discard
      errors:
        missing: { body: { error: no key } }
        inFlight: { status: 429, headers: { Retry-After: "2" } }
    respond: { status: 201 }
  - name: inherits
    method: POST
    path: /payments
    respond: { status: 201 }
  - name: opts out
    method: GET
    path: /payments
    idempotency: off
    respond: { status: 200 }
`)
	routes := set.Routes()
	full := routes[0].Idempotency
	if full == nil {
		t.Fatal("full: no idempotency")
	}
	if full.Key.String() != "header.Idempotency-Key" || full.Required {
		t.Errorf("key %s required %v", full.Key, full.Required)
	}
	var scope []string
	for _, a := range full.Scope {
		scope = append(scope, a.String())
	}
	if !reflect.DeepEqual(scope, []string{"header.Authorization", "path.acct"}) {
		t.Errorf("scope %v", scope)
	}
	var fp []string
	for _, p := range full.Fingerprint {
		fp = append(fp, p.String())
	}
	if !reflect.DeepEqual(fp, []string{"body", "method", "query.mode"}) {
		t.Errorf("fingerprint %v", fp)
	}
	if full.Group != "reservations" || full.TTL != 90*time.Minute || full.InFlight != Wait || full.OnClientAbort != Discard || full.ReplayHeader != "X-Replayed" {
		t.Errorf("got %+v", full)
	}
	for status, want := range map[int]bool{101: true, 201: true, 302: true, 404: true, 500: true} {
		if full.Store.Has(status) != want {
			t.Errorf("store all: Has(%d) = %v", status, !want)
		}
	}
	if full.Missing == nil || full.Missing.Status != 400 || string(full.Missing.Body) != `{"error":"no key"}` {
		t.Errorf("missing override: %+v", full.Missing)
	}
	if full.Conflict == nil || full.Conflict.Status != 429 {
		t.Errorf("inFlight override: %+v", full.Conflict)
	}
	if full.Mismatch != nil {
		t.Errorf("mismatch override set without being written")
	}

	in := routes[1].Idempotency
	if in == nil || !in.Required || in.Group != "POST /payments" || in.TTL != DefaultIdempotencyTTL ||
		in.InFlight != Conflict || in.Store != DefaultStore || in.ReplayHeader != DefaultReplayHeader ||
		len(in.Fingerprint) != 1 || in.Fingerprint[0].Whole != "body" || in.OnClientAbort != Complete {
		t.Errorf("inherited defaults: %+v", in)
	}
	if !in.Store.Has(201) || !in.Store.Has(422) || in.Store.Has(500) || in.Store.Has(302) {
		t.Errorf("default store %s", in.Store)
	}
	if routes[2].Idempotency != nil {
		t.Errorf("idempotency: off kept a block")
	}
}
