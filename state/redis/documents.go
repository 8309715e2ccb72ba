package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/state"
)

// redisDocuments keeps the runtime scenario documents for every replica:
// each document's JSON in the hash d (by id), their order in the sorted
// set d:order (scored by the version that added them), and the version in
// d:v, which every change increments and publishes on n:d, waking the
// replicas, which then list and reload. Each operation is one script, so
// the three keys change together.
type redisDocuments struct{ r *Store }

var _ state.Documents = (*redisDocuments)(nil)

// Documents returns the runtime scenario documents, shared by every
// replica. Reset leaves them, as Memory's.
func (r *Store) Documents() state.Documents { return r.docs }

var _ state.DocumentStore = (*Store)(nil)

func (d *redisDocuments) keys() []string {
	return []string{d.r.key("d"), d.r.key("d", "order"), d.r.key("d", "v")}
}

func (d *redisDocuments) channel() string { return d.r.key("n", "d") }

// addDocScript starts a version that does not exist (a fresh Redis, or
// one restarted without persistence) at Redis's clock in milliseconds,
// not at 0: a replica that has not looked since Redis forgot still serves
// the old version, and would take the new documents' version for its own
// if it were 1 again, serving the forgotten documents and never the new.
// The clock is far ahead of any version of an earlier start.
var addDocScript = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return -2 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return -1 end
if redis.call('EXISTS', KEYS[3]) == 0 then
  local t = redis.call('TIME')
  redis.call('SET', KEYS[3], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
local v = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], v, ARGV[1])
redis.call('PUBLISH', ARGV[4], v)
return v
`)

func (d *redisDocuments) Add(ctx context.Context, doc state.Document) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("state: redis documents add: %w", err)
	}
	n, err := addDocScript.Run(ctx, d.r.rdb, d.keys(), doc.ID, raw, state.MaxDocuments, d.channel()).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("state: redis documents add: %w", err)
	case n == -1:
		return state.ErrDocumentsFull
	case n == -2:
		return state.ErrDocumentExists
	}
	return nil
}

var removeDocScript = goredis.NewScript(`
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
local v = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[2], v)
return 1
`)

func (d *redisDocuments) Remove(ctx context.Context, id string) (bool, error) {
	n, err := removeDocScript.Run(ctx, d.r.rdb, d.keys(), id, d.channel()).Int64()
	if err != nil {
		return false, fmt.Errorf("state: redis documents remove: %w", err)
	}
	return n == 1, nil
}

var clearDocsScript = goredis.NewScript(`
local n = redis.call('HLEN', KEYS[1])
if n == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
local v = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[1], v)
return n
`)

func (d *redisDocuments) Clear(ctx context.Context) (int, error) {
	n, err := clearDocsScript.Run(ctx, d.r.rdb, d.keys(), d.channel()).Int64()
	if err != nil {
		return 0, fmt.Errorf("state: redis documents clear: %w", err)
	}
	return int(n), nil
}

var listDocsScript = goredis.NewScript(`
local out = {redis.call('GET', KEYS[3]) or '0'}
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  out[#out + 1] = redis.call('HGET', KEYS[1], id)
end
return out
`)

func (d *redisDocuments) List(ctx context.Context) ([]state.Document, int64, error) {
	vals, err := listDocsScript.Run(ctx, d.r.rdb, d.keys()).StringSlice()
	if err != nil {
		return nil, 0, fmt.Errorf("state: redis documents list: %w", err)
	}
	if len(vals) == 0 {
		return nil, 0, fmt.Errorf("state: redis documents list: empty answer")
	}
	version, _ := strconv.ParseInt(vals[0], 10, 64)
	docs := make([]state.Document, 0, len(vals)-1)
	for _, raw := range vals[1:] {
		var doc state.Document
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			return nil, 0, fmt.Errorf("state: redis documents list: %w", err)
		}
		docs = append(docs, doc)
	}
	return docs, version, nil
}

func (d *redisDocuments) Wait(ctx context.Context, version int64) error {
	for {
		wake := d.r.notify.wait(d.channel())
		v, err := d.r.rdb.Get(ctx, d.r.key("d", "v")).Int64()
		switch {
		case err == goredis.Nil:
			v = 0
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			v = version // Redis is away: wait for it as for a change, bounded
		}
		if v != version {
			return nil
		}
		if d.r.notify.closed() {
			return fmt.Errorf("state: redis documents: store closed")
		}
		if !sleep(ctx, wake) {
			return ctx.Err()
		}
	}
}

// The replicas' versions are in the hash d:replicas: each replica's
// field holds "<version> <expiry>", the expiry in Redis's own clock (unix
// milliseconds), so that the replicas' clocks need not agree. Serving
// publishes on n:r, waking AllServing.
var _ state.Replicas = (*redisDocuments)(nil)

func (d *redisDocuments) replicasKey() string { return d.r.key("d", "replicas") }

func (d *redisDocuments) replicasChannel() string { return d.r.key("n", "r") }

var servingScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. (now + tonumber(ARGV[3])))
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
`)

func (d *redisDocuments) Serving(ctx context.Context, replica string, version int64, ttl time.Duration) error {
	ms := max(ttl.Milliseconds(), 1)
	if err := servingScript.Run(ctx, d.r.rdb, []string{d.replicasKey()}, replica, version, ms, d.replicasChannel()).Err(); err != nil {
		return fmt.Errorf("state: redis replicas: %w", err)
	}
	return nil
}

// behindScript counts the live replicas that serve a version below
// ARGV[1], and forgets those whose time ran out.
var behindScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local behind = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local v, exp = string.match(all[i + 1], '^(%d+) (%d+)$')
  if not v or tonumber(exp) < now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif tonumber(v) < tonumber(ARGV[1]) then
    behind = behind + 1
  end
end
return behind
`)

func (d *redisDocuments) AllServing(ctx context.Context, version int64) error {
	for {
		wake := d.r.notify.wait(d.replicasChannel())
		n, err := behindScript.Run(ctx, d.r.rdb, []string{d.replicasKey()}, version).Int64()
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("state: redis replicas: %w", err)
		case n == 0:
			return nil
		}
		if d.r.notify.closed() {
			return fmt.Errorf("state: redis replicas: store closed")
		}
		if !sleep(ctx, wake) {
			return ctx.Err()
		}
	}
}

func (d *redisDocuments) Leave(ctx context.Context, replica string) error {
	if err := d.r.rdb.HDel(ctx, d.replicasKey(), replica).Err(); err != nil {
		return fmt.Errorf("state: redis replicas: %w", err)
	}
	return nil
}
