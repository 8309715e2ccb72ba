package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/state"
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

// The heartbeat also finds out when Redis forgot everything (a restart
// without persistence, a FLUSHDB): the key up, set by the first replica
// and never deleted, is then gone. The replica whose beat sets it again
// (SET NX: one of them) tells its server through Forgotten, which seeds
// the scenarios' collections again. It finds out within replicaLease/3,
// or at once when its subscription reconnects after a restart.

// beatScript: KEYS r:<ID>, up. ARGV the lease (ms). Sets the replica's
// key, and up if it is missing; returns 1 when it was.
var beatScript = goredis.NewScript(`
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
if redis.call('SET', KEYS[2], '1', 'NX') then return 1 end
return 0
`)

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
	forgot chan struct{} // capacity 1: a beat found up missing
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
	h := &heartbeat{r: r, key: r.key("r", r.replica), lease: lease, now: make(chan struct{}, 1), forgot: make(chan struct{}, 1), done: make(chan struct{})}
	// The first beat may set up (a new Redis, or the first replica of
	// this version): nothing was forgotten since this replica seeded.
	if _, err := h.beat(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go h.run(rctx)
	return h, nil
}

// beat sets the replica's key and reports whether up was missing.
func (h *heartbeat) beat(ctx context.Context) (forgot bool, err error) {
	n, err := beatScript.Run(ctx, h.r.rdb, []string{h.key, h.r.key("up")}, h.lease.Milliseconds()).Int()
	return n == 1, err
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
		forgot, err := h.beat(bctx)
		cancel()
		if err != nil {
			t.Reset(min(time.Second, every))
			continue
		}
		if forgot {
			select {
			case h.forgot <- struct{}{}:
			default: // one is pending: the server seeds once for both
			}
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

var _ state.Forgetter = (*Store)(nil)

// Forgotten receives when this replica found that Redis forgot what the
// replicas shared (liveness.go): its server seeds the collections again.
func (r *Store) Forgotten() <-chan struct{} { return r.beat.forgot }
