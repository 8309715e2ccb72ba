package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Which replicas are alive, so that a claim of an idempotency key whose
// replica died mid-request (SIGKILL, an OOM kill, a pod evicted) does not
// stay in flight for the key's whole ttl: every retry of it got 409 for
// 24 hours, and one with inFlight: wait hung until its client gave up.
//
// Each Store is a replica with a random ID, and keeps the key r:<ID> set
// with an expiry of replicaLease, setting it again every replicaLease/3
// from one goroutine (and at once when its subscription comes back after
// Redis was away). A claim records its replica's ID (o), and the claim
// script takes a key in flight whose replica's r: key is gone as
// abandoned: forgotten, and claimed anew. This costs no round trip per
// request (the check is inside the claim's script) and one per replica
// every replicaLease/3.
//
// A live replica's key can lapse only if Redis did not answer it for
// replicaLease (20 s and more of outage, or a replica paused that long):
// a request of it still in its delay may then run twice. Its own
// completion fails (the token no longer holds the key), so its client
// gets a 503 rather than a second answer.

// replicaLease is how long a replica that stopped setting its r: key
// counts as alive.
const replicaLease = 30 * time.Second

// heartbeat keeps a replica's r: key set. It owns one goroutine, started
// by startHeartbeat and stopped by close.
type heartbeat struct {
	r      *Store
	key    string
	lease  time.Duration
	now    chan struct{} // capacity 1: set the key at once
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
}

// newReplicaID returns a random ID for a Store.
func newReplicaID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on Linux (crypto/rand docs)
	return hex.EncodeToString(b[:])
}

// startHeartbeat sets the replica's key once, within ctx, to expire after
// lease, and then keeps it set in the background.
func startHeartbeat(ctx context.Context, r *Store, lease time.Duration) (*heartbeat, error) {
	h := &heartbeat{r: r, key: r.key("r", r.replica), lease: lease, now: make(chan struct{}, 1), done: make(chan struct{})}
	if err := h.beat(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go h.run(rctx)
	return h, nil
}

func (h *heartbeat) beat(ctx context.Context) error {
	return h.r.rdb.Set(ctx, h.key, "1", h.lease).Err()
}

// run sets the key every lease/3, and every second while Redis does not
// answer.
func (h *heartbeat) run(ctx context.Context) {
	defer close(h.done)
	every := h.lease / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.now:
			t.Stop()
		}
		bctx, cancel := context.WithTimeout(ctx, h.r.rdb.Options().ReadTimeout+h.r.rdb.Options().WriteTimeout)
		err := h.beat(bctx)
		cancel()
		if err != nil {
			t.Reset(min(time.Second, every))
			continue
		}
		t.Reset(every)
	}
}

// soon asks run to set the key at once.
func (h *heartbeat) soon() {
	select {
	case h.now <- struct{}{}:
	default:
	}
}

// close stops run. The key is left to expire: a request of this replica
// still in flight keeps its claim until then.
func (h *heartbeat) close() {
	h.cancel()
	<-h.done
}
