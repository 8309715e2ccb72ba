package redis

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/scenariomock/scenariomock/state"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// redisIdempotency keeps each key as a Redis hash, plus three sorted sets
// that make the bound and the admin listing exact without a scan of the
// database:
//
//   - i:idx, every key by its member "created\0group\0scope\0key"
//     (created as 20 zero-padded digits of Unix nanoseconds, score 0), so
//     that lexical order is List's order: oldest claim first; and i:g:<group>
//     the same for each group, so that a group's listing and expiry read
//     only its keys;
//   - i:exp, the same members scored by expiry (Unix milliseconds), for
//     the sweep and for evicting expired keys first;
//   - i:lru, completed keys scored by their last use (a counter), for
//     evicting the least recently used. Keys in flight are not in it.
//
// Expiry follows the store's clock (Options.Now), passed to every script,
// as the memory store does; each key also has a Redis TTL a little past
// its expiry, so that Redis frees what nobody sweeps.
//
// The key's hash (i:<sha1 of group\0scope\0key>) holds: id (the claim's
// token), fp, e (expiry, 20 digits), t (the ttl, 20 digits of
// nanoseconds), m (its member), done, st, h (headers as JSON), b (body),
// n (replays), g (the reset epoch it was claimed in: a record of an
// earlier epoch counts as gone, fence.go), o (the claiming replica's ID:
// a key in flight of a replica that died counts as gone, liveness.go).
//
// A key in flight never expires: its e is the largest time, and Complete
// sets it to the store's now + t, so that a route slower than its ttl
// cannot run twice at once. A replica that died mid-request leaves it to
// the next claim once its r: key lapses (liveness.go); the Redis TTL,
// max(ttl, inFlightLease) until it completes, is only a net for a key
// that nobody claims again.
type redisIdempotency struct {
	r *Store
	// retry frees keys whose release, completion or claim Redis did not
	// answer, once it answers again.
	retry *releaser
}

// redisTTLSlack is how long Redis keeps a key past its expiry: replicas'
// clocks differ a little, and the store's clock decides.
const redisTTLSlack = 10 * time.Second

// inFlightLease is the shortest Redis TTL of a key in flight (or its ttl,
// if longer): Redis frees the key of a replica that died mid-request
// after that, if no claim of it came first (liveness.go); a live request
// is never that slow.
const inFlightLease = time.Hour

// maxRedisTTL caps the Redis TTL of a key whose ttl is longer (the store's
// clock still decides; this only keeps the sum from overflowing).
const maxRedisTTL = 100 * 365 * 24 * time.Hour

// luaIdemLib is shared by the idempotency scripts. ARGV[1] is the key
// prefix (Prefix + "{state}:").
const luaIdemLib = `
local base = ARGV[1]
local function recKey(m) return base .. 'i:' .. redis.sha1hex(string.sub(m, 22)) end
local function expired(e, now)
  local eh, nh = tonumber(string.sub(e, 1, 10)), tonumber(string.sub(now, 1, 10))
  if eh ~= nh then return eh < nh end
  return tonumber(string.sub(e, 11)) <= tonumber(string.sub(now, 11))
end
local function add20(a, b)
  local lo = tonumber(string.sub(a, 11)) + tonumber(string.sub(b, 11))
  local hi = tonumber(string.sub(a, 1, 10)) + tonumber(string.sub(b, 1, 10))
  if lo >= 1e10 then lo = lo - 1e10; hi = hi + 1 end
  if hi > 922337203 or (hi == 922337203 and lo > 6854775807) then return '09223372036854775807' end
  return string.format('%010d%010d', hi, lo)
end
local function ms20(a)
  return tonumber(string.sub(a, 1, 10)) * 1e4 + math.floor(tonumber(string.sub(a, 11)) / 1e6)
end
local function groupOf(m)
  local rest = string.sub(m, 22)
  return string.sub(rest, 1, string.find(rest, '\0', 1, true) - 1)
end
-- A record of a claim made before the last reset (its g is not the
-- epoch e) is as good as gone: resetScript leaves the records to
-- cleanTrashScript, to hold Redis briefly (fence.go).
local epoch
local function currentEpoch()
  if not epoch then epoch = redis.call('GET', base .. 'e') or '0' end
  return epoch
end
local function live(g) return (g or '0') == currentEpoch() end
-- forget removes member m and, if it is still its key's record (not a
-- claim of the same key since a reset), the record. Returns 1 when that
-- was a live key.
local function forget(m)
  local k = recKey(m)
  local r = redis.call('HMGET', k, 'done', 'sz', 'm', 'g')
  local done, n = r[1], 0
  if r[3] == m then
    if live(r[4]) then
      n = 1
      if done == '1' and r[2] then redis.call('DECRBY', base .. 'i:bytes', r[2]) end
    end
    redis.call('DEL', k)
    if done ~= '1' then
      redis.call('PUBLISH', base .. 'n:i:' .. redis.sha1hex(string.sub(m, 22)), '1')
    end
  end
  redis.call('ZREM', base .. 'i:idx', m)
  redis.call('ZREM', base .. 'i:g:' .. groupOf(m), m)
  redis.call('ZREM', base .. 'i:exp', m)
  redis.call('ZREM', base .. 'i:lru', m)
  return n
end
`

// claimScript: KEYS rec, idx, exp, lru, use. ARGV base, now (20 digits),
// now (ms), expires (20 digits: the largest time, in flight), expires
// (ms), Redis TTL (ms), fp, id, member, max keys, ttl (20 digits), the
// replica's ID. Returns {1} new, {2, status, headers, body} replay,
// {3} mismatch, {4} in flight, {5} abandoned (its release came first).
// A key in flight whose replica is no longer alive (its r: key lapsed,
// liveness.go) is forgotten, as an expired one is, and claimed anew.
var claimScript = goredis.NewScript(luaIdemLib + `
local now, nowms = ARGV[2], tonumber(ARGV[3])
local rec = redis.call('HMGET', KEYS[1], 'id', 'fp', 'e', 'done', 'm', 'g', 'o')
if rec[1] and not live(rec[6]) then
  rec[1] = false -- claimed before a reset: forgotten (cleanTrashScript frees it)
end
if rec[1] and (expired(rec[3], now) or (rec[4] ~= '1' and rec[7] and redis.call('EXISTS', base .. 'r:' .. rec[7]) == 0)) then
  forget(rec[5])
  rec[1] = false
end
if rec[1] then
  if rec[2] ~= ARGV[7] then return {3} end
  if rec[4] ~= '1' then return {4} end
  redis.call('HINCRBY', KEYS[1], 'n', 1)
  redis.call('ZADD', KEYS[4], redis.call('INCR', KEYS[5]), rec[5])
  local r = redis.call('HMGET', KEYS[1], 'st', 'h', 'b')
  return {2, r[1], r[2], r[3]}
end
if redis.call('EXISTS', base .. 'i:lost:' .. ARGV[8]) == 1 then return {5} end
-- Expired keys nobody asks for again go a couple per new claim.
local function expiredFirst()
  local x = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if #x == 0 or tonumber(x[2]) > nowms then return nil end
  local e = redis.call('HGET', recKey(x[1]), 'e')
  if e and not expired(e, now) then return nil end
  return x[1]
end
for i = 1, 2 do
  local m = expiredFirst()
  if not m then break end
  forget(m)
end
-- Past the bound: an expired key first, then the least recently used
-- completed key; never a key in flight.
for i = 1, 2 do
  if redis.call('ZCARD', KEYS[2]) < tonumber(ARGV[10]) then break end
  local m = expiredFirst()
  if not m then
    local y = redis.call('ZRANGE', KEYS[4], 0, 0)
    m = y[1]
  end
  if not m then break end
  forget(m)
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[8], 'fp', ARGV[7], 'e', ARGV[4], 't', ARGV[11], 'm', ARGV[9], 'done', '0', 'n', 0, 'g', currentEpoch(), 'o', ARGV[12])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], 0, ARGV[9])
redis.call('ZADD', base .. 'i:g:' .. groupOf(ARGV[9]), 0, ARGV[9])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[9])
return {1}
`)

// completeScript: KEYS rec, lru, use, exp, bytes. ARGV base, id, status,
// headers, body, channel, now (20 digits), Redis TTL slack (ms), the
// largest Redis TTL (ms), the byte bound, the epoch ("" unfenced). The
// key's expiry starts now; past the byte bound the least recently used
// completed keys go (this one last). Returns 1, 0 when the token no
// longer holds the key, or -2 when fenced off (the key, if the token
// still holds it, is freed: its claim came after the reset).
var completeScript = goredis.NewScript(luaIdemLib + luaFenced + `
local r = redis.call('HMGET', KEYS[1], 'id', 'done', 'm', 't', 'g')
if fenced(base .. 'e', ARGV[11]) then
  if r[1] == ARGV[2] and r[2] == '0' then forget(r[3]) end
  return -2
end
if r[1] ~= ARGV[2] or r[2] ~= '0' or not live(r[5]) then return 0 end
local sz = #ARGV[4] + #ARGV[5] + 8
redis.call('HSET', KEYS[1], 'done', '1', 'st', ARGV[3], 'h', ARGV[4], 'b', ARGV[5], 'sz', sz)
redis.call('INCRBY', KEYS[5], sz)
if r[4] then
  local e = add20(ARGV[7], r[4])
  redis.call('HSET', KEYS[1], 'e', e)
  redis.call('ZADD', KEYS[4], ms20(e), r[3])
  redis.call('PEXPIRE', KEYS[1], math.min(ms20(r[4]), tonumber(ARGV[9])) + tonumber(ARGV[8]))
end
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), r[3])
redis.call('PUBLISH', ARGV[6], '1')
while tonumber(redis.call('GET', KEYS[5]) or '0') > tonumber(ARGV[10]) do
  local y = redis.call('ZRANGE', KEYS[2], 0, 0)
  if not y[1] then break end
  forget(y[1])
end
return 1
`)

// releaseScript: KEYS rec. ARGV base, id, lost ("1" when the claim's
// answer was lost). Returns 1, or 0 when the token no longer holds the
// key. Releasing a lost claim that does not hold the key leaves a mark
// for a minute, i:lost:<id>: the claim, sent on another connection, may
// run after this release, and then must not take the key.
var releaseScript = goredis.NewScript(luaIdemLib + `
local r = redis.call('HMGET', KEYS[1], 'id', 'done', 'm', 'g')
if r[1] ~= ARGV[2] or r[2] ~= '0' or not live(r[4]) then
  if ARGV[3] == '1' then redis.call('SET', base .. 'i:lost:' .. ARGV[2], '1', 'PX', 60000) end
  return 0
end
forget(r[3])
return 1
`)

// expireScript: KEYS the index to read (i:idx, or i:g:<group>). ARGV
// base, group, key ("" for any), cursor. It reads up to expireChunk
// members from the cursor, forgets those that match, and returns {how many
// it forgot, the next cursor or -1 at the end}: Expire calls it until the
// end, so that no one call holds Redis for long.
var expireScript = goredis.NewScript(luaIdemLib + `
local n, cursor = 0, tonumber(ARGV[4])
local ms = redis.call('ZRANGE', KEYS[1], cursor, cursor + 999)
for _, m in ipairs(ms) do
  local rest = string.sub(m, 22)
  local i = string.find(rest, '\0', 1, true)
  local j = string.find(rest, '\0', i + 1, true)
  local g, k = string.sub(rest, 1, i - 1), string.sub(rest, j + 1)
  if (ARGV[2] == '' or g == ARGV[2]) and (ARGV[3] == '' or k == ARGV[3]) then
    n = n + forget(m)
  else
    cursor = cursor + 1
  end
end
if #ms < 1000 then cursor = -1 end
return {n, cursor}
`)

// listScript: KEYS the index to read (i:idx or i:g:<group>), i:exp. ARGV
// base, now (20 digits), now (ms), offset, limit (0: no limit). It first
// forgets the keys that have expired (up to 10,000 a call), so that the
// index counts only live keys, then reads one page. Returns {total,
// {{member, expires, done, status, replays, ttl}...}}.
var listScript = goredis.NewScript(luaIdemLib + `
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[3], 'LIMIT', 0, 10000)) do
  local e = redis.call('HGET', recKey(m), 'e')
  if not e or expired(e, ARGV[2]) then forget(m) end
end
local offset, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
local total = redis.call('ZCARD', KEYS[1])
local stop = -1
if limit > 0 then stop = offset + limit - 1 end
local out = {}
if offset < total then
  for _, m in ipairs(redis.call('ZRANGE', KEYS[1], offset, stop)) do
    local r = redis.call('HMGET', recKey(m), 'e', 'done', 'st', 'n', 't', 'g', 'm')
    if r[1] and r[7] == m and live(r[6]) and not expired(r[1], ARGV[2]) then
      out[#out + 1] = {m, r[1], r[2], r[3] or '', r[4] or '0', r[5] or '0'}
    end
  end
end
return {total, out}
`)

// nanos20 writes t as 20 zero-padded digits of Unix nanoseconds, which
// compare as the times do.
func nanos20(ns int64) string { return fmt.Sprintf("%020d", ns) }

// recID names a key's hash: the SHA-1 of group\0scope\0key.
func recID(k state.Key) string {
	h := sha1.Sum([]byte(k.Group + "\x00" + k.Scope + "\x00" + k.Key))
	return hex.EncodeToString(h[:])
}

func (s *redisIdempotency) keys(k state.Key) []string {
	r := s.r
	return []string{r.key("i", recID(k)), r.key("i", "idx"), r.key("i", "exp"), r.key("i", "lru"), r.key("i", "use")}
}

func (s *redisIdempotency) channel(k state.Key) string { return s.r.key("n", "i", recID(k)) }

// newTokenID returns a random claim ID. Chosen here rather than by Redis,
// so that a claim whose answer was lost can still be released.
func newTokenID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on Linux (crypto/rand docs)
	return binary.BigEndian.Uint64(b[:]) | 1
}

func (s *redisIdempotency) Claim(ctx context.Context, k state.Key, fp state.Fingerprint, o state.ClaimOptions) (state.Claim, error) {
	ttl := o.TTL
	if ttl <= 0 {
		ttl = state.DefaultTTL
	}
	for {
		var wake <-chan struct{}
		if o.Wait {
			wake = s.r.notify.wait(s.channel(k))
		}
		id := newTokenID()
		res, err := s.claimOnce(ctx, k, fp, ttl, id)
		if err != nil {
			// The claim may have run and its answer been lost: free the
			// key if it did, or a retry would find it in flight until
			// it expires. A claim that never left is not released.
			if sent(err) {
				s.releaseLost(ctx, state.Token{Key: k, ID: id})
			}
			if o.Wait && ctx.Err() != nil {
				// The waiter left (or left while waiting): as documented.
				return state.Claim{Outcome: state.InFlight}, nil
			}
			return state.Claim{}, fmt.Errorf("state: redis claim: %w", err)
		}
		c, err := decodeClaim(res)
		if err != nil {
			return state.Claim{}, err
		}
		switch {
		case c.Outcome == state.New:
			c.Token = state.Token{Key: k, ID: id}
			return c, nil
		case c.Outcome != state.InFlight || !o.Wait:
			return c, nil
		}
		if s.r.notify.closed() || !sleep(ctx, wake) {
			return state.Claim{Outcome: state.InFlight}, nil
		}
	}
}

// claimOnce runs the claim script once with token ID id.
func (s *redisIdempotency) claimOnce(ctx context.Context, k state.Key, fp state.Fingerprint, ttl time.Duration, id uint64) ([]any, error) {
	now := s.r.o.Now().UnixNano()
	const inFlight = int64(math.MaxInt64) // expiry counts from completion
	redisTTL := (min(max(ttl, inFlightLease), maxRedisTTL) + redisTTLSlack).Milliseconds()
	member := nanos20(now) + "\x00" + k.Group + "\x00" + k.Scope + "\x00" + k.Key
	return claimScript.Run(ctx, s.r.rdb, s.keys(k), s.r.base, nanos20(now), now/1e6, nanos20(inFlight), inFlight/1e6,
		redisTTL, fp[:], strconv.FormatUint(id, 10), member, s.r.o.MaxKeys, nanos20(int64(ttl)), s.r.replica).Slice()
}

// releaseLost releases a claim whose outcome is unknown, within a short
// time of its own; a failure (Redis still away) leaves it to the
// background retry.
func (s *redisIdempotency) releaseLost(ctx context.Context, t state.Token) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReadTimeout)
	defer cancel()
	if err := s.release(rctx, t, true); err != nil && !errors.Is(err, state.ErrNotClaimed) {
		s.retry.add(t, true)
	}
}

// sent reports whether a command that failed with err may have reached
// Redis: not when no connection could be had.
func sent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return !errors.Is(err, goredis.ErrPoolTimeout)
}

func decodeClaim(res []any) (state.Claim, error) {
	if len(res) == 0 {
		return state.Claim{}, errors.New("state: redis claim: empty reply")
	}
	outcome, _ := res[0].(int64)
	switch state.Outcome(outcome) {
	case state.New, state.Mismatch, state.InFlight:
		return state.Claim{Outcome: state.Outcome(outcome)}, nil
	case 5:
		// Only a claim whose caller already gave up (and released it)
		// meets its mark; no caller waits for this answer.
		return state.Claim{}, errors.New("state: redis claim: abandoned")
	case state.Replay:
		if len(res) != 4 {
			break
		}
		st, _ := res[1].(string)
		h, _ := res[2].(string)
		b, _ := res[3].(string)
		status, err := strconv.Atoi(st)
		if err != nil {
			break
		}
		var header []state.Header
		if err := json.Unmarshal([]byte(h), &header); err != nil {
			break
		}
		return state.Claim{Outcome: state.Replay, Response: state.Response{Status: status, Header: header, Body: []byte(b)}}, nil
	}
	return state.Claim{}, fmt.Errorf("state: redis claim: unexpected reply %v", res)
}

func (s *redisIdempotency) Complete(ctx context.Context, t state.Token, resp state.Response) error {
	h, err := json.Marshal(resp.Header)
	if err != nil {
		return err
	}
	keys := s.keys(t.Key)
	n, err := completeScript.Run(ctx, s.r.rdb, []string{keys[0], keys[3], keys[4], keys[2], s.r.key("i", "bytes")}, s.r.base,
		strconv.FormatUint(t.ID, 10), resp.Status, h, resp.Body, s.channel(t.Key),
		nanos20(s.r.o.Now().UnixNano()), redisTTLSlack.Milliseconds(), maxRedisTTL.Milliseconds(), s.r.o.MaxIdempotencyBytes, fenceArg(ctx)).Int()
	if err != nil {
		// The completion may or may not have run. Either way the key
		// must not stay in flight: a release once Redis answers frees
		// it if it did not (the caller was told it failed), and finds
		// it completed, changing nothing, if it did.
		s.retry.add(t, false)
		return fmt.Errorf("state: redis complete: %w", err)
	}
	if n == fencedResult {
		return s.r.refused(ctx)
	}
	if n == 0 {
		return state.ErrNotClaimed
	}
	return nil
}

func (s *redisIdempotency) Release(ctx context.Context, t state.Token) error {
	err := s.release(ctx, t, false)
	if err != nil && !errors.Is(err, state.ErrNotClaimed) {
		// Redis did not answer: release again once it does, rather
		// than leave the key in flight (409) for its whole TTL.
		s.retry.add(t, false)
	}
	return err
}

func (s *redisIdempotency) release(ctx context.Context, t state.Token, lost bool) error {
	flag := "0"
	if lost {
		flag = "1"
	}
	n, err := releaseScript.Run(ctx, s.r.rdb, []string{s.keys(t.Key)[0]}, s.r.base, strconv.FormatUint(t.ID, 10), flag).Int()
	if err != nil {
		return fmt.Errorf("state: redis release: %w", err)
	}
	if n == 0 {
		return state.ErrNotClaimed
	}
	return nil
}

func (s *redisIdempotency) Expire(ctx context.Context, group, key string) (int, error) {
	n, cursor := 0, int64(0)
	for cursor >= 0 {
		res, err := expireScript.Run(ctx, s.r.rdb, []string{s.index(group)}, s.r.base, group, key, cursor).Int64Slice()
		if err != nil {
			return n, fmt.Errorf("state: redis expire: %w", err)
		}
		if len(res) != 2 {
			return n, fmt.Errorf("state: redis expire: unexpected reply %v", res)
		}
		n += int(res[0])
		cursor = res[1]
	}
	return n, nil
}

// index names the sorted set of group's keys, or of all keys for "".
func (s *redisIdempotency) index(group string) string {
	if group == "" {
		return s.r.key("i", "idx")
	}
	return s.r.key("i", "g", group)
}

func (s *redisIdempotency) Reset(ctx context.Context) error {
	_, err := s.Expire(ctx, "", "")
	return err
}

func (s *redisIdempotency) List(ctx context.Context, o state.ListOptions) ([]state.Record, int, error) {
	now := s.r.o.Now().UnixNano()
	res, err := listScript.Run(ctx, s.r.rdb, []string{s.index(o.Group), s.r.key("i", "exp")}, s.r.base, nanos20(now), now/1e6,
		max(o.Offset, 0), max(o.Limit, 0)).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("state: redis list: %w", err)
	}
	bad := fmt.Errorf("state: redis list: unexpected reply %v", res)
	if len(res) != 2 {
		return nil, 0, bad
	}
	total, _ := res[0].(int64)
	rows, _ := res[1].([]any)
	out := make([]state.Record, 0, len(rows))
	for _, row := range rows {
		f, _ := row.([]any)
		if len(f) != 6 {
			return nil, 0, bad
		}
		m, _ := f[0].(string)
		e, _ := f[1].(string)
		done, _ := f[2].(string)
		st, _ := f[3].(string)
		n, _ := f[4].(string)
		ttl, _ := f[5].(string)
		parts := strings.SplitN(m, "\x00", 4)
		if len(parts) != 4 {
			return nil, 0, bad
		}
		created, err1 := strconv.ParseInt(parts[0], 10, 64)
		expires, err2 := strconv.ParseInt(e, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, 0, bad
		}
		rec := state.Record{
			Key: state.Key{Group: parts[1], Scope: parts[2], Key: parts[3]}, State: state.StateInFlight,
			Created: time.Unix(0, created), Expires: time.Unix(0, expires),
		}
		rec.Replays, _ = strconv.ParseInt(n, 10, 64)
		if done == "1" {
			rec.State = state.StateCompleted
			rec.Status, _ = strconv.Atoi(st)
		} else if t, err := strconv.ParseInt(ttl, 10, 64); err == nil && t > 0 {
			// In flight: it would expire ttl after completing now.
			rec.Expires = time.Unix(0, min(now, math.MaxInt64-t)+t)
		}
		out = append(out, rec)
	}
	return out, int(total), nil
}
