package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/redis"
)

// TestRedisForgottenDocumentsSplit: Redis forgets the runtime documents
// (a restart without persistence) and a document is posted before replica
// b looks again (b looks at a message on the documents' channel or once a
// second; the FLUSHALL here sends none). Before, the new version was 1
// again, the one b already served, so b kept serving the forgotten
// document and never the new one, while a replica that listed anew served
// only the new one; now a version that starts again starts at Redis's
// clock, far past b's.
func TestRedisForgottenDocumentsSplit(t *testing.T) {
	rs, open, _, b := replicasServingOld(t, "docsplit:")
	// Redis forgets, and a document comes before b looks again (b looks
	// at a message on the documents' channel or once a second; FLUSHALL
	// sends none).
	rdb := goredis.NewClient(&goredis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := open().(state.DocumentStore).Documents().Add(context.Background(), state.Document{ID: "rt_new", Added: time.Now(),
		Data: []byte("routes:\n  - { name: new, method: GET, path: /new, respond: { body: new } }\n")}); err != nil {
		t.Fatal(err)
	}
	// A replica that lists anew (as a, the poster, would at its own POST)
	// serves only /new.
	c, stopC := serveReal(t, Options{State: open()}, replicasScenario)
	defer func() { _ = stopC() }()
	waitListening(t, c)
	if r := do(t, "GET", c+"/new", ""); r.status != 200 {
		t.Fatalf("a replica started after: GET /new = %d", r.status)
	}
	if r := do(t, "GET", c+"/old", ""); r.status != 404 {
		t.Fatalf("a replica started after: GET /old = %d", r.status)
	}
	eventually(t, patience, func() string {
		if r := do(t, "GET", b+"/new", ""); r.status != 200 {
			return "b does not serve /new, posted after Redis forgot /old"
		}
		if r := do(t, "GET", b+"/old", ""); r.status != 404 {
			return "b still serves /old, which Redis forgot"
		}
		return ""
	})
}

// TestRedisForgottenDocuments: a Redis restarted without persistence
// forgets the runtime documents, and every replica stops serving them
// (none puts back its own copy), as the README says.
func TestRedisForgottenDocuments(t *testing.T) {
	rs, _, a, b := replicasServingOld(t, "docforgot:")
	rs.Stop()
	rs.Restart() // empty
	eventually(t, patience, func() string {
		for _, hs := range []string{a, b} {
			if r := do(t, "GET", hs+"/old", ""); r.status != 404 {
				return fmt.Sprintf("GET %s/old after Redis forgot it = %d", hs, r.status)
			}
			if r := do(t, "GET", hs+"/files", ""); r.status != 200 {
				return fmt.Sprintf("GET %s/files = %d", hs, r.status)
			}
		}
		return ""
	})
}

// replicasScenario is the file routes of replicasServingOld's replicas.
const replicasScenario = `
routes:
  - { name: files, method: GET, path: /files, respond: { body: files } }
`

// replicasServingOld starts a redis-server and two replicas, a and b, on
// it (under prefix), posts a runtime document serving /old to a, and
// returns once b serves it too; open opens another store on that Redis.
// The replicas stop when t ends.
func replicasServingOld(t *testing.T, prefix string) (rs *redistest.Server, open func() state.Store, a, b string) {
	t.Helper()
	rs = redistest.Start(t)
	open = func() state.Store {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, stopA := serveReal(t, Options{State: open()}, replicasScenario)
	b, stopB := serveReal(t, Options{State: open()}, replicasScenario)
	t.Cleanup(func() {
		_ = stopA()
		_ = stopB()
	})
	waitListening(t, a)
	waitListening(t, b)
	postDoc(t, a, "routes:\n  - { name: old, method: GET, path: /old, respond: { body: old } }\n")
	eventually(t, patience, func() string {
		if r := do(t, "GET", b+"/old", ""); r.status != 200 {
			return "b does not serve /old"
		}
		return ""
	})
	return rs, open, a, b
}
