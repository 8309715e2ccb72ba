package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/state"
)

// The reset fence across replicas (state/fence.go says what it promises).
//
// The epoch is the key e, moved by resetScript in the same script that
// forgets the state, so that no write can fall between the two. Each
// fenced write's script reads e and compares it with the epoch its
// request noted (fenceArg): one GET inside a round trip the write makes
// anyway. A request notes the epoch without a round trip, from this
// replica's copy (Store.Epoch), which the subscription keeps: resetScript
// publishes the new epoch on n:e, and every replica takes it and
// acknowledges (ackScript); Reset returns once as many replicas have
// acknowledged as the publication reached, so that a request that
// arrives anywhere after a Reset returned notes the new epoch. A replica
// whose copy is behind (its subscription was away, or a Reset gave up
// waiting for it) only refuses writes it could have let through, and
// catches up on its first refusal, or when its subscription comes back.
//
// The epoch only grows, except when Redis forgets it: a restart without
// persistence, a FLUSHDB, a failover to a replica that lagged. Then e is
// behind what the replicas know, and every fenced write would be refused
// for good (each request notes the replica's copy, which never moves
// back). So a replica that reads an e behind its copy puts its copy back
// in Redis (restoreEpochScript: the larger of the two wins), and a Reset
// moves the epoch past both Redis's and the resetting replica's, so that
// it still fences the requests that arrived before it.

// resetAckWait bounds how long Reset waits for the replicas to
// acknowledge the new epoch. One that does not in this time gets
// ErrResetUnconfirmed; a live replica takes a millisecond.
const resetAckWait = 5 * time.Second

// resetScript: KEYS e. ARGV base, the trash's Redis TTL (ms), the
// resetting replica's epoch. Moves the epoch past both e and that one
// (e is behind it only if Redis forgot it), forgets every sequence position, counter, item, route state and journal entry
// (UNLINK: Redis frees big values in the background), and puts the
// idempotency keys' index aside as i:trash:<epoch>, their records left in
// place: a record of an earlier epoch counts as gone to every script
// (luaIdemLib's live), and cleanTrashScript frees them after, a thousand
// at a time. So the script's time grows with the routes and collections,
// not with the keys stored (see BenchmarkRedisReset). Publishes the epoch
// on n:e and returns {epoch, replicas the publication reached}.
var resetScript = goredis.NewScript(`
local base = ARGV[1]
local e = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(ARGV[3])) + 1
redis.call('SET', KEYS[1], e)
if redis.call('EXISTS', base .. 'i:idx') == 1 then
  local trash = base .. 'i:trash:' .. e
  redis.call('RENAME', base .. 'i:idx', trash)
  redis.call('PEXPIRE', trash, ARGV[2])
end
redis.call('UNLINK', base .. 'i:exp', base .. 'i:lru', base .. 'i:bytes')
for _, route in ipairs(redis.call('HKEYS', base .. 'q:hits')) do
  redis.call('UNLINK', base .. 'q:k:' .. route, base .. 'q:o:' .. route)
end
redis.call('UNLINK', base .. 'q:hits', base .. 'c', base .. 'c:z')
for _, c in ipairs(redis.call('HKEYS', base .. 'o:n')) do
  redis.call('UNLINK', base .. 'o:i:' .. c, base .. 'o:s:' .. c)
end
redis.call('UNLINK', base .. 'o:n', base .. 'o:t', base .. 'o:b', base .. 'o:nb', base .. 'j', base .. 's')
return {e, redis.call('PUBLISH', base .. 'n:e', e)}
`)

// cleanTrashScript: KEYS i:trash:<epoch>. ARGV base. Frees the records
// of up to a thousand keys put aside by a reset (those not claimed again
// since), waking the waiters of those that were in flight, and returns
// how many are left.
var cleanTrashScript = goredis.NewScript(luaIdemLib + `
local ms = redis.call('ZPOPMIN', KEYS[1], 1000)
for i = 1, #ms, 2 do
  local m = ms[i]
  local k = recKey(m)
  local r = redis.call('HMGET', k, 'm', 'done')
  if r[1] == m then
    redis.call('UNLINK', k)
    if r[2] ~= '1' then
      redis.call('PUBLISH', base .. 'n:i:' .. redis.sha1hex(string.sub(m, 22)), '1')
    end
  end
  redis.call('ZREM', base .. 'i:g:' .. groupOf(m), m)
end
return redis.call('ZCARD', KEYS[1])
`)

// trashTTL is how long Redis keeps a reset's trash if no cleaning
// finishes it (the replica died mid-way): past the longest Redis TTL
// a record has by default (24 h and the slack).
const trashTTL = 25 * time.Hour

// ackScript: KEYS ea:<epoch>. ARGV channel n:ea, epoch. Counts one
// replica that knows the epoch and wakes the Reset that waits.
var ackScript = goredis.NewScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], 60000)
redis.call('PUBLISH', ARGV[1], ARGV[2])
return n
`)

// luaFenced is the check of a fenced write's script: want is the epoch
// the request noted ("" when the write is not fenced).
const luaFenced = `
local function fenced(epochKey, want)
  return want ~= '' and (redis.call('GET', epochKey) or '0') ~= want
end
`

// fenceArg is the epoch a write with ctx passes to its script: "" when
// it is not fenced.
func fenceArg(ctx context.Context) string {
	if e, ok := state.EpochOf(ctx); ok {
		return strconv.FormatUint(e, 10)
	}
	return ""
}

// fencedResult is what a fenced write's script returns when it refused.
const fencedResult = -2

var _ state.Fencer = (*Store)(nil)

// Epoch returns the number of resets of the shared state, as this
// replica knows it, without a round trip.
func (r *Store) Epoch() uint64 { return r.epoch.Load() }

// noteEpoch takes e as the epoch unless a later one is known.
func (r *Store) noteEpoch(e uint64) {
	for {
		old := r.epoch.Load()
		if e <= old || r.epoch.CompareAndSwap(old, e) {
			return
		}
	}
}

// restoreEpochScript: KEYS e. ARGV an epoch a replica knows. Sets e to
// it if e is behind (Redis forgot it), and returns e.
var restoreEpochScript = goredis.NewScript(`
local e = tonumber(redis.call('GET', KEYS[1]) or '0')
local known = tonumber(ARGV[1])
if e < known then
  redis.call('SET', KEYS[1], known)
  return known
end
return e
`)

// refreshEpoch reads the epoch from Redis, and puts this replica's copy
// back if Redis's is behind it: Redis forgot it, and without the copy
// every request this replica notes would be refused.
func (r *Store) refreshEpoch(ctx context.Context) error {
	e, err := restoreEpochScript.Run(ctx, r.rdb, []string{r.key("e")}, r.epoch.Load()).Int64()
	if err != nil {
		return err
	}
	if e < 0 {
		return fmt.Errorf("epoch %d", e)
	}
	r.noteEpoch(uint64(e))
	return nil
}

// refused is what a write returns when its script refused it: ErrFenced,
// after catching up with the epoch that refused it, so that this
// replica's later requests note it (its copy may be behind, if the
// subscription missed a reset).
func (r *Store) refused(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReadTimeout)
	defer cancel()
	_ = r.refreshEpoch(rctx) // the write is refused either way
	return state.ErrFenced
}

// epochMessage is the subscription's handling of a message on n:e: this
// replica now knows the epoch, and says so to the Reset that waits.
func (r *Store) epochMessage(ctx context.Context, payload string) {
	e, err := strconv.ParseUint(payload, 10, 64)
	if err != nil {
		return
	}
	r.noteEpoch(e)
	actx, cancel := context.WithTimeout(ctx, DefaultReadTimeout)
	defer cancel()
	// Not acknowledged (Redis away): the Reset stops waiting at
	// resetAckWait, and says so.
	_ = ackScript.Run(actx, r.rdb, []string{r.key("ea", payload)}, r.key("n", "ea"), payload).Err()
}

// resubscribed is the subscription's handling of a reconnection: a reset
// may have been missed meanwhile.
func (r *Store) resubscribed(ctx context.Context) {
	// Redis may have been away long enough for this replica's key to
	// lapse (liveness.go).
	r.beat.soon()
	rctx, cancel := context.WithTimeout(ctx, DefaultReadTimeout)
	defer cancel()
	_ = r.refreshEpoch(rctx) // still away: the next refusal catches up
}

// Reset forgets everything every replica shares, in one script with the
// epoch's move, frees the idempotency records it put aside, and returns
// once every replica knows the new epoch (or fails with
// ErrResetUnconfirmed after resetAckWait, the state reset all the same).
// Claim IDs and journal IDs keep increasing, so that no stale token or
// tail sees one twice.
func (r *Store) Reset(ctx context.Context) error {
	wake := r.notify.wait(r.key("n", "ea"))
	res, err := resetScript.Run(ctx, r.rdb, []string{r.key("e")}, r.base, trashTTL.Milliseconds(), r.epoch.Load()).Int64Slice()
	if err != nil {
		return fmt.Errorf("state: redis reset: %w", err)
	}
	if len(res) != 2 || res[0] <= 0 {
		return fmt.Errorf("state: redis reset: unexpected reply %v", res)
	}
	epoch, replicas := uint64(res[0]), res[1]
	r.noteEpoch(epoch)
	// The keys are forgotten already; this frees their memory. A
	// failure leaves the rest to the trash's expiry.
	trash := r.key("i", "trash", strconv.FormatUint(epoch, 10))
	for {
		left, err := cleanTrashScript.Run(ctx, r.rdb, []string{trash}, r.base).Int64()
		if err != nil || left == 0 {
			break
		}
	}
	wctx, cancel := context.WithTimeout(ctx, resetAckWait)
	defer cancel()
	ack := r.key("ea", strconv.FormatUint(epoch, 10))
	for {
		n, err := r.rdb.Get(wctx, ack).Int64()
		if err != nil && !errors.Is(err, goredis.Nil) && wctx.Err() == nil {
			return fmt.Errorf("state: redis reset: reading the acknowledgements: %w", err)
		}
		if n >= replicas {
			return nil
		}
		if wctx.Err() != nil || !sleep(wctx, wake) {
			return fmt.Errorf("%w: %d of %d replicas knew epoch %d after %s", state.ErrResetUnconfirmed, n, replicas, epoch, resetAckWait)
		}
		wake = r.notify.wait(r.key("n", "ea"))
	}
}
