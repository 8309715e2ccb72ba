package redis

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/webhooks"
)

// redisOutbox is the webhook outbox that replicas share, so that each
// attempt is made by one replica and what is pending outlives any of
// them. Keys (under the store's prefix and {state} hash tag):
//
//   - w:q, a sorted set of delivery ids scored by when each is due, in
//     Unix microseconds; a claimed delivery is scored by its lease's end,
//     so that a replica that dies mid-attempt leaves it due again then;
//   - w:p:<endpoint>, the same for one endpoint's deliveries, and w:e,
//     the endpoints that have any, each scored by its earliest: a claim
//     reads an endpoint its bound keeps back once, not each of its
//     deliveries, so that a backlog held back for a receiver that hangs
//     costs the claims for the others nothing (w:q counts and lists);
//   - w:d:<id>, a hash: j (the fixed part, JSON), b (the body), f (the
//     faults), n (attempts recorded), s and e (the last status and error),
//     ev and ep (event id, endpoint), o (its object set's key, or ""),
//     and t (the claim's token, while claimed);
//   - w:o:<sha1 of endpoint\0object>, the ids of an object's deliveries
//     at an endpoint, for the reorder fault.
//
// Each operation is one script call: one round trip. The bound is the
// sorted set's size, checked in the script that adds.
type redisOutbox struct {
	r     *Store
	queue int
	// adopted: outboxAdoptScript ran, so that deliveries an older build
	// left in w:q alone are in their endpoint's w:p and w:e too.
	adoptMu sync.Mutex
	adopted atomic.Bool
}

// outboxPoll bounds how long a replica waits before it looks at the
// shared outbox again: another replica may have added a delivery due now
// and be too busy (or gone) to make its attempt.
const outboxPoll = time.Second

// Outbox returns the webhook outbox in Redis that every replica on this
// prefix shares, holding at most queue deliveries (10,000 when queue is 0
// or less) across them all. It is safe for concurrent use.
func (r *Store) Outbox(queue int) webhooks.Outbox {
	if queue <= 0 {
		queue = 10_000
	}
	return &redisOutbox{r: r, queue: queue}
}

// fixed is the part of a delivery that does not change, stored as j.
type fixed struct {
	ID        string            `json:"id"`
	EventID   string            `json:"ev"`
	Type      string            `json:"type"`
	Endpoint  string            `json:"ep"`
	Object    string            `json:"obj,omitempty"`
	Session   string            `json:"sess,omitempty"`
	Created   time.Time         `json:"created"`
	Due       time.Time         `json:"due"`
	DropFirst bool              `json:"drop,omitempty"`
	Negative  webhooks.Negative `json:"neg,omitempty"`
	// Target is an endpoint found at send time, which every replica
	// needs to make the attempt (webhooks.Queued.Target).
	Target *webhooks.Target `json:"to,omitempty"`
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// settle is the scripts' function that scores an endpoint in w:e by its
// earliest delivery, and removes it when it has none.
const settle = `
local function settle(e, base, ep)
  local h = redis.call('ZRANGE', base .. 'w:p:' .. ep, 0, 0, 'WITHSCORES')
  if h[2] then redis.call('ZADD', e, h[2], ep) else redis.call('ZREM', e, ep) end
end
`

// outboxAddScript: KEYS q, e. ARGV base, queue, due, reorder, event id,
// endpoint, object set key, reorder note, count, then per delivery id,
// j, b, f. Returns {1} added, or {0, pending} when full.
var outboxAddScript = goredis.NewScript(settle + `
local q, e, base = KEYS[1], KEYS[2], ARGV[1]
local pq = base .. 'w:p:' .. ARGV[6]
local n = tonumber(ARGV[9])
local have = redis.call('ZCARD', q)
if have + n > tonumber(ARGV[2]) then return {0, have} end
local due, ok = tonumber(ARGV[3]), ARGV[7]
if ARGV[4] == '1' and ok ~= '' then
  for _, id in ipairs(redis.call('SMEMBERS', ok)) do
    local k = base .. 'w:d:' .. id
    local r = redis.call('HMGET', k, 'n', 't', 'ev', 'ep', 'f')
    if r[1] == '0' and not r[2] and r[3] ~= ARGV[5] and r[4] == ARGV[6] then
      local s = tonumber(redis.call('ZSCORE', pq, id))
      if s and s <= due then
        redis.call('ZADD', q, due + 1, id)
        redis.call('ZADD', pq, due + 1, id)
        local f = r[5] or ''
        if f ~= '' then f = f .. ', ' .. ARGV[8] else f = ARGV[8] end
        redis.call('HSET', k, 'f', f)
      end
    end
  end
end
for i = 0, n - 1 do
  local id = ARGV[10 + 4 * i]
  redis.call('HSET', base .. 'w:d:' .. id, 'j', ARGV[11 + 4 * i], 'b', ARGV[12 + 4 * i], 'f', ARGV[13 + 4 * i],
    'n', 0, 's', 0, 'e', '', 'ev', ARGV[5], 'ep', ARGV[6], 'o', ok)
  redis.call('ZADD', q, due, id)
  redis.call('ZADD', pq, due, id)
  if ok ~= '' then redis.call('SADD', ok, id) end
end
settle(e, base, ARGV[6])
return {1}
`)

func (o *redisOutbox) Add(ctx context.Context, ps []webhooks.Queued, reorder bool) error {
	if len(ps) == 0 {
		return nil
	}
	first := &ps[0]
	objKey := ""
	if first.Object != "" {
		h := sha1.Sum([]byte(first.Endpoint + "\x00" + first.Object))
		objKey = o.r.key("w", "o", hex.EncodeToString(h[:]))
	}
	re := "0"
	if reorder {
		re = "1"
	}
	args := make([]any, 0, 9+4*len(ps))
	args = append(args, o.r.base, o.queue, micros(first.Due), re, first.EventID, first.Endpoint, objKey,
		webhooks.OvertakenBy(first.EventID), len(ps))
	for i := range ps {
		p := &ps[i]
		j, err := json.Marshal(fixed{ID: p.ID, EventID: p.EventID, Type: p.Type, Endpoint: p.Endpoint, Object: p.Object, Session: p.Session,
			Created: p.Created, Due: p.Due, DropFirst: p.DropFirst, Negative: p.Negative, Target: p.Target})
		if err != nil {
			return err
		}
		args = append(args, p.ID, j, p.Body, p.Faults)
	}
	res, err := outboxAddScript.Run(ctx, o.r.rdb, o.keys(), args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("state: redis webhook outbox add: %w", err)
	}
	if res[0] == 0 {
		return webhooks.FullError(int(res[1]), o.queue)
	}
	return nil
}

// outboxClaimScript: KEYS q, e. ARGV base, now, max, lease end, token,
// per-endpoint bound (0: none), then endpoint, attempts in flight and
// slow ("1" or "0", PerEndpoint.Slow) triplets. Returns the next score
// ("" when none), then per claimed delivery j, b, f, n, s, e. It reads
// the endpoints with a delivery due, earliest first, and from each that
// its bound leaves room for, as many due as that room (and max) allows,
// until max endpoints with none in flight and not slow gave some (the
// others are no more than the attempts in flight, and the slow); it
// claims the first max of those, the endpoints with none in flight and
// not slow first, then earliest first. A delivery its endpoint's bound
// keeps back keeps its score, and is not read.
var outboxClaimScript = goredis.NewScript(settle + `
local q, e, base, now = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local max, per = tonumber(ARGV[3]), tonumber(ARGV[6])
local room, busy = {}, {}
for i = 7, #ARGV, 3 do
  room[ARGV[i]] = per - tonumber(ARGV[i + 1])
  if per > 0 and (tonumber(ARGV[i + 1]) > 0 or ARGV[i + 2] == '1') then busy[ARGV[i]] = 1 end
end
local cands, gave, off, page = {}, 0, 0, 64
while gave < max do
  local eps = redis.call('ZRANGEBYSCORE', e, '-inf', now, 'LIMIT', off, page)
  for _, ep in ipairs(eps) do
    if gave >= max then break end
    local r = max
    if per > 0 then r = math.min(room[ep] or per, max) end
    if r > 0 then
      local got = redis.call('ZRANGEBYSCORE', base .. 'w:p:' .. ep, '-inf', now, 'WITHSCORES', 'LIMIT', 0, r)
      local b = busy[ep] or 0
      for i = 1, #got, 2 do table.insert(cands, {tonumber(got[i + 1]), got[i], ep, b}) end
      if #got > 0 and b == 0 then gave = gave + 1 end
    end
  end
  if #eps < page then break end
  off = off + page
end
table.sort(cands, function(a, b)
  if a[4] ~= b[4] then return a[4] < b[4] end
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[2] < b[2]
end)
local out, touched, n = {''}, {}, 0
for _, c in ipairs(cands) do
  if n >= max then break end
  local id, ep = c[2], c[3]
  local k = base .. 'w:d:' .. id
  local r = redis.call('HMGET', k, 'j', 'b', 'f', 'n', 's', 'e')
  if r[1] then
    redis.call('HSET', k, 't', ARGV[5])
    redis.call('ZADD', q, ARGV[4], id)
    redis.call('ZADD', base .. 'w:p:' .. ep, ARGV[4], id)
    for i = 1, 6 do table.insert(out, r[i] or '') end
    n = n + 1
  else
    redis.call('ZREM', q, id)
    redis.call('ZREM', base .. 'w:p:' .. ep, id)
  end
  touched[ep] = true
end
for ep in pairs(touched) do settle(e, base, ep) end
local nx
if n >= max then
  nx = redis.call('ZRANGE', e, 0, 0, 'WITHSCORES')
else
  nx = redis.call('ZRANGEBYSCORE', e, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
end
if nx[2] then out[1] = nx[2] end
return out
`)

// outboxAdoptScript: KEYS q, e. ARGV base. Puts each delivery of w:q
// that its endpoint's w:p does not hold into it, at its score, and
// scores its endpoint in w:e: a build before the per-endpoint queues
// kept w:q alone, and its pending deliveries would otherwise never be
// claimed. Returns how many it put. It reads w:q whole, at most the
// outbox's bound, once per outbox.
var outboxAdoptScript = goredis.NewScript(settle + `
local q, e, base = KEYS[1], KEYS[2], ARGV[1]
local all = redis.call('ZRANGE', q, 0, -1, 'WITHSCORES')
local touched, n = {}, 0
for i = 1, #all, 2 do
  local id = all[i]
  local ep = redis.call('HGET', base .. 'w:d:' .. id, 'ep')
  if ep and not redis.call('ZSCORE', base .. 'w:p:' .. ep, id) then
    redis.call('ZADD', base .. 'w:p:' .. ep, all[i + 1], id)
    touched[ep] = true
    n = n + 1
  end
end
for ep in pairs(touched) do settle(e, base, ep) end
return n
`)

// adopt runs outboxAdoptScript once per outbox, before its first claim
// or drop; a failed run is tried again by the next.
func (o *redisOutbox) adopt(ctx context.Context) error {
	if o.adopted.Load() {
		return nil
	}
	o.adoptMu.Lock()
	defer o.adoptMu.Unlock()
	if o.adopted.Load() {
		return nil
	}
	if err := outboxAdoptScript.Run(ctx, o.r.rdb, o.keys(), o.r.base).Err(); err != nil {
		return fmt.Errorf("state: redis webhook outbox: adopting deliveries of an older build: %w", err)
	}
	o.adopted.Store(true)
	return nil
}

// keys are the KEYS of the outbox's scripts: w:q and w:e.
func (o *redisOutbox) keys() []string { return []string{o.r.key("w", "q"), o.r.key("w", "e")} }

func (o *redisOutbox) Claim(ctx context.Context, now time.Time, max int, lease time.Duration, per webhooks.PerEndpoint) ([]webhooks.Queued, time.Time, error) {
	if err := o.adopt(ctx); err != nil {
		return nil, time.Time{}, err
	}
	token := make([]byte, 12)
	_, _ = rand.Read(token)
	args := make([]any, 0, 6+3*(len(per.Busy)+len(per.Slow)))
	args = append(args, o.r.base, micros(now), max, micros(now.Add(lease)), hex.EncodeToString(token), per.Max)
	if per.Max > 0 {
		for ep, n := range per.Busy {
			args = append(args, ep, n, slow(per.Slow[ep]))
		}
		for ep, s := range per.Slow {
			if _, busy := per.Busy[ep]; s && !busy {
				args = append(args, ep, 0, "1")
			}
		}
	}
	res, err := outboxClaimScript.Run(ctx, o.r.rdb, o.keys(), args...).StringSlice()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("state: redis webhook outbox claim: %w", err)
	}
	var next time.Time
	if res[0] != "" {
		us, _ := strconv.ParseFloat(res[0], 64)
		next = time.UnixMicro(int64(us))
	}
	if poll := now.Add(outboxPoll); next.IsZero() || next.After(poll) {
		next = poll
	}
	var out []webhooks.Queued
	for i := 1; i+6 <= len(res); i += 6 {
		q, err := decodeQueued(res[i : i+6])
		if err != nil {
			return out, next, err
		}
		q.Token = hex.EncodeToString(token)
		out = append(out, q)
	}
	return out, next, nil
}

// decodeQueued reads j, b, f, n, s, e.
func decodeQueued(f []string) (webhooks.Queued, error) {
	var x fixed
	if err := json.Unmarshal([]byte(f[0]), &x); err != nil {
		return webhooks.Queued{}, fmt.Errorf("state: redis webhook outbox: a delivery: %w", err)
	}
	n, _ := strconv.Atoi(f[3])
	s, _ := strconv.Atoi(f[4])
	return webhooks.Queued{
		ID: x.ID, EventID: x.EventID, Type: x.Type, Endpoint: x.Endpoint, Object: x.Object, Session: x.Session, Body: []byte(f[1]),
		Created: x.Created, Due: x.Due, Attempts: n, DropFirst: x.DropFirst, Negative: x.Negative, Faults: f[2],
		LastStatus: s, LastError: f[5], Target: x.Target,
	}, nil
}

// outboxRetryScript: KEYS q, e. ARGV base, id, token, due, n, s, e.
var outboxRetryScript = goredis.NewScript(settle + `
local k = ARGV[1] .. 'w:d:' .. ARGV[2]
local r = redis.call('HMGET', k, 't', 'ep')
if r[1] ~= ARGV[3] then return 0 end
redis.call('HSET', k, 'n', ARGV[5], 's', ARGV[6], 'e', ARGV[7])
redis.call('HDEL', k, 't')
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
redis.call('ZADD', ARGV[1] .. 'w:p:' .. r[2], ARGV[4], ARGV[2])
settle(KEYS[2], ARGV[1], r[2])
return 1
`)

func (o *redisOutbox) Retry(ctx context.Context, p *webhooks.Queued, due time.Time) error {
	ok, err := outboxRetryScript.Run(ctx, o.r.rdb, o.keys(),
		o.r.base, p.ID, p.Token, micros(due), p.Attempts, p.LastStatus, p.LastError).Int()
	if err != nil {
		return fmt.Errorf("state: redis webhook outbox retry: %w", err)
	}
	if ok == 0 {
		return webhooks.ErrLeaseLost
	}
	return nil
}

// outboxFinishScript: KEYS q, e. ARGV base, id, token.
var outboxFinishScript = goredis.NewScript(settle + `
local k = ARGV[1] .. 'w:d:' .. ARGV[2]
local r = redis.call('HMGET', k, 't', 'o', 'ep')
if r[1] ~= ARGV[3] then return 0 end
redis.call('DEL', k)
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZREM', ARGV[1] .. 'w:p:' .. r[3], ARGV[2])
settle(KEYS[2], ARGV[1], r[3])
if r[2] and r[2] ~= '' then redis.call('SREM', r[2], ARGV[2]) end
return 1
`)

func (o *redisOutbox) Finish(ctx context.Context, p *webhooks.Queued) error {
	ok, err := outboxFinishScript.Run(ctx, o.r.rdb, o.keys(), o.r.base, p.ID, p.Token).Int()
	if err != nil {
		return fmt.Errorf("state: redis webhook outbox finish: %w", err)
	}
	if ok == 0 {
		return webhooks.ErrLeaseLost
	}
	return nil
}

// outboxScanScript: KEYS q, e. ARGV base, mode ('list', 'drop' or
// 'reset'), endpoint. Returns j, b, f, n, s, e (b empty but for drop) of
// the deliveries listed or dropped. The outbox is bounded, so one script
// walks it all (a drop, its endpoint's).
var outboxScanScript = goredis.NewScript(settle + `
local q, e, base, mode = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local out = {}
local scan = q
if mode == 'drop' then scan = base .. 'w:p:' .. ARGV[3] end
for _, id in ipairs(redis.call('ZRANGE', scan, 0, -1)) do
  local k = base .. 'w:d:' .. id
  local r = redis.call('HMGET', k, 'j', 'f', 'n', 's', 'e', 'ep', 't', 'o')
  local take = mode == 'list' or mode == 'reset' or (r[6] == ARGV[3] and not r[7])
  if take and r[1] then
    for _, i in ipairs({1, 0, 2, 3, 4, 5}) do
      if i == 0 then table.insert(out, '') else table.insert(out, r[i] or '') end
    end
  end
  if take and mode ~= 'list' then
    redis.call('DEL', k)
    redis.call('ZREM', q, id)
    if r[6] then redis.call('ZREM', base .. 'w:p:' .. r[6], id) end
    if r[8] and r[8] ~= '' then redis.call('SREM', r[8], id) end
  end
end
if mode == 'drop' then
  settle(e, base, ARGV[3])
elseif mode == 'reset' then
  for _, ep in ipairs(redis.call('ZRANGE', e, 0, -1)) do redis.call('DEL', base .. 'w:p:' .. ep) end
  redis.call('DEL', e)
end
return out
`)

func (o *redisOutbox) scan(ctx context.Context, mode, endpoint string) ([]webhooks.Queued, error) {
	res, err := outboxScanScript.Run(ctx, o.r.rdb, o.keys(), o.r.base, mode, endpoint).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("state: redis webhook outbox %s: %w", mode, err)
	}
	out := make([]webhooks.Queued, 0, len(res)/6)
	var errs []error
	for i := 0; i+6 <= len(res); i += 6 {
		q, err := decodeQueued(res[i : i+6])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, q)
	}
	return out, errors.Join(errs...)
}

func (o *redisOutbox) Drop(ctx context.Context, endpoint string) ([]webhooks.Queued, error) {
	if err := o.adopt(ctx); err != nil {
		return nil, err
	}
	return o.scan(ctx, "drop", endpoint)
}

func (o *redisOutbox) List(ctx context.Context) ([]webhooks.Queued, error) {
	return o.scan(ctx, "list", "")
}

func (o *redisOutbox) Reset(ctx context.Context) error {
	_, err := o.scan(ctx, "reset", "")
	return err
}

func (o *redisOutbox) Len(ctx context.Context) (int, error) {
	n, err := o.r.rdb.ZCard(ctx, o.r.key("w", "q")).Result()
	if err != nil {
		return 0, fmt.Errorf("state: redis webhook outbox: %w", err)
	}
	return int(n), nil
}

// slow is a PerEndpoint.Slow flag as the claim script reads it.
func slow(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
