package redis

import (
	"context"
	"fmt"
	"github.com/scenariomock/scenariomock/state"
	"sort"
	"strconv"

	goredis "github.com/redis/go-redis/v9"
)

// redisSequences keeps, in hash q:hits, each route's hit count by
// identity (its fields are also the list of routes, for Reset and
// Retain), and per route with a per-key sequence a hash q:k:<route> of
// calls per attribute value and a list q:o:<route> of the values in the
// order they came, to forget the oldest past the bound.
type redisSequences struct{ r *Store }

// hitKeyScript: KEYS hits, keys, order. ARGV route, value, bound.
var hitKeyScript = goredis.NewScript(`
local hit = redis.call('HINCRBY', KEYS[1], ARGV[1], 1) - 1
local n = redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
if n == 1 then
  redis.call('RPUSH', KEYS[3], ARGV[2])
  if redis.call('LLEN', KEYS[3]) > tonumber(ARGV[3]) then
    redis.call('HDEL', KEYS[2], redis.call('LPOP', KEYS[3]))
  end
end
return {hit, n - 1}
`)

// retainScript: KEYS hits. ARGV base, then the routes to keep ("" alone:
// keep none). Forgets every other route.
var retainScript = goredis.NewScript(`
local keep = {}
for i = 2, #ARGV do keep[ARGV[i]] = true end
for _, route in ipairs(redis.call('HKEYS', KEYS[1])) do
  if not keep[route] then
    redis.call('HDEL', KEYS[1], route)
    redis.call('UNLINK', ARGV[1] .. 'q:k:' .. route, ARGV[1] .. 'q:o:' .. route)
  end
end
return 0
`)

func (s *redisSequences) Hit(ctx context.Context, route string) (int64, error) {
	n, err := s.r.rdb.HIncrBy(ctx, s.r.key("q", "hits"), route, 1).Result()
	if err != nil {
		return 0, fmt.Errorf("state: redis hit: %w", err)
	}
	return n - 1, nil
}

func (s *redisSequences) HitKey(ctx context.Context, route, value string) (state.Position, error) {
	res, err := hitKeyScript.Run(ctx, s.r.rdb, []string{s.r.key("q", "hits"), s.r.key("q", "k", route), s.r.key("q", "o", route)},
		route, value, s.r.o.MaxSequenceKeys).Int64Slice()
	if err != nil {
		return state.Position{}, fmt.Errorf("state: redis hit: %w", err)
	}
	if len(res) != 2 {
		return state.Position{}, fmt.Errorf("state: redis hit: unexpected reply %v", res)
	}
	return state.Position{Hit: res[0], Key: res[1]}, nil
}

func (s *redisSequences) Count(ctx context.Context, route string) (state.SequenceCount, error) {
	var hits *goredis.StringCmd
	var keys *goredis.IntCmd
	_, err := s.r.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		hits = p.HGet(ctx, s.r.key("q", "hits"), route)
		keys = p.HLen(ctx, s.r.key("q", "k", route))
		return nil
	})
	if err != nil && err != goredis.Nil {
		return state.SequenceCount{}, fmt.Errorf("state: redis count: %w", err)
	}
	n, _ := hits.Int64() // goredis.Nil: no hits yet
	return state.SequenceCount{Hits: n, Keys: int(keys.Val())}, nil
}

func (s *redisSequences) Reset(ctx context.Context, route string) error {
	var err error
	if route == "" {
		err = retainScript.Run(ctx, s.r.rdb, []string{s.r.key("q", "hits")}, s.r.base).Err()
	} else {
		_, err = s.r.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.HDel(ctx, s.r.key("q", "hits"), route)
			p.Unlink(ctx, s.r.key("q", "k", route), s.r.key("q", "o", route))
			return nil
		})
	}
	if err != nil && err != goredis.Nil {
		return fmt.Errorf("state: redis reset sequences: %w", err)
	}
	return nil
}

func (s *redisSequences) Retain(ctx context.Context, routes []string) error {
	args := make([]any, 0, len(routes)+1)
	args = append(args, s.r.base)
	for _, r := range routes {
		args = append(args, r)
	}
	if err := retainScript.Run(ctx, s.r.rdb, []string{s.r.key("q", "hits")}, args...).Err(); err != nil && err != goredis.Nil {
		return fmt.Errorf("state: redis retain: %w", err)
	}
	return nil
}

// redisCounters keeps the named counters in one hash, c, and their names
// in a sorted set, c:z (all scored 0, so in lexical order), for paging.
// The bound on names is checked in the same script that adds one.
type redisCounters struct{ r *Store }

var _ state.CounterPager = (*redisCounters)(nil)

// nextScript: KEYS c, c:z, e. ARGV name, the bound on names, the epoch
// ("" unfenced). Returns the counter's value, -1 when the name is new and
// the bound is reached, or -2 when fenced off.
var nextScript = goredis.NewScript(luaFenced + `
if fenced(KEYS[3], ARGV[3]) then return -2 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
  redis.call('ZADD', KEYS[2], 0, ARGV[1])
end
return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
`)

// pageCountersScript: KEYS c, c:z. ARGV offset, limit (0: all). Returns
// {total, names, values}.
var pageCountersScript = goredis.NewScript(`
local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local stop = -1
if limit > 0 then stop = offset + limit - 1 end
local names = redis.call('ZRANGE', KEYS[2], offset, stop)
local values = {}
for i = 1, #names, 1000 do
  local part = redis.call('HMGET', KEYS[1], unpack(names, i, math.min(i + 999, #names)))
  for _, v in ipairs(part) do values[#values + 1] = v or '0' end
end
return {redis.call('ZCARD', KEYS[2]), names, values}
`)

func (c *redisCounters) keys() []string { return []string{c.r.key("c"), c.r.key("c", "z")} }

func (c *redisCounters) Next(ctx context.Context, name string) (int64, error) {
	if len(name) > state.MaxCounterName {
		return 0, state.ErrCounterName
	}
	n, err := nextScript.Run(ctx, c.r.rdb, []string{c.r.key("c"), c.r.key("c", "z"), c.r.key("e")}, name, c.r.o.MaxCounters, fenceArg(ctx)).Int64()
	if err != nil {
		return 0, fmt.Errorf("state: redis counter: %w", err)
	}
	if n == fencedResult {
		return 0, c.r.refused(ctx)
	}
	if n < 0 {
		return 0, state.ErrCountersFull
	}
	return n, nil
}

func (c *redisCounters) List(ctx context.Context) ([]state.Counter, error) {
	out, _, err := c.Page(ctx, 0, 0)
	return out, err
}

func (c *redisCounters) Page(ctx context.Context, offset, limit int) ([]state.Counter, int, error) {
	res, err := pageCountersScript.Run(ctx, c.r.rdb, c.keys(), max(offset, 0), max(limit, 0)).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("state: redis counters: %w", err)
	}
	if len(res) != 3 {
		return nil, 0, fmt.Errorf("state: redis counters: unexpected reply %v", res)
	}
	total, _ := res[0].(int64)
	names, _ := res[1].([]any)
	values, _ := res[2].([]any)
	out := make([]state.Counter, 0, len(names))
	for i, name := range names {
		s, _ := name.(string)
		var v string
		if i < len(values) {
			v, _ = values[i].(string)
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		out = append(out, state.Counter{Name: s, Value: n})
	}
	return out, int(total), nil
}

func (c *redisCounters) Reset(ctx context.Context, name string) error {
	var err error
	if name == "" {
		err = c.r.rdb.Del(ctx, c.keys()...).Err()
	} else {
		_, err = c.r.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.HDel(ctx, c.r.key("c"), name)
			p.ZRem(ctx, c.r.key("c", "z"), name)
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("state: redis reset counters: %w", err)
	}
	return nil
}

// redisCollections keeps each collection as a hash o:i:<name> (id to
// body) and a sorted set o:s:<name> (id by insertion number, from the
// counter o:seq), a hash o:n of item counts by collection (also the list
// of collections) and the total o:t, which the scripts check against the
// bound in the same step as they add; likewise the bytes of ids and bodies,
// o:b in all and o:nb by collection, against the byte bound.
type redisCollections struct{ r *Store }

// luaColBase is the collection scripts' prelude: ARGV[1] is the key
// prefix, ARGV[2] the collection.
const luaColBase = `
local base, name = ARGV[1], ARGV[2]
local items, order = base .. 'o:i:' .. name, base .. 'o:s:' .. name
local names, total, seq = base .. 'o:n', base .. 'o:t', base .. 'o:seq'
local bytes, nbytes = base .. 'o:b', base .. 'o:nb'
`

// saveScript: ARGV base, name, id, body, bound, byte bound, epoch (""
// unfenced). Returns 1 created, 0 replaced, -1 full, -2 fenced off.
var saveScript = goredis.NewScript(luaColBase + luaFenced + `
if fenced(base .. 'e', ARGV[7]) then return -2 end
local used = tonumber(redis.call('GET', bytes) or '0')
if redis.call('HEXISTS', items, ARGV[3]) == 1 then
  local grown = #ARGV[4] - redis.call('HSTRLEN', items, ARGV[3])
  if grown > 0 and used + grown > tonumber(ARGV[6]) then return -1 end
  redis.call('HSET', items, ARGV[3], ARGV[4])
  redis.call('INCRBY', bytes, grown)
  redis.call('HINCRBY', nbytes, name, grown)
  return 0
end
if tonumber(redis.call('GET', total) or '0') >= tonumber(ARGV[5]) then return -1 end
if used + #ARGV[3] + #ARGV[4] > tonumber(ARGV[6]) then return -1 end
redis.call('INCRBY', bytes, #ARGV[3] + #ARGV[4])
redis.call('HINCRBY', nbytes, name, #ARGV[3] + #ARGV[4])
redis.call('HSET', items, ARGV[3], ARGV[4])
redis.call('ZADD', order, redis.call('INCR', seq), ARGV[3])
redis.call('INCR', total)
redis.call('HINCRBY', names, name, 1)
return 1
`)

// deleteScript: ARGV base, name, id, epoch ("" unfenced). Returns 1
// when the item existed, -2 when fenced off.
var deleteScript = goredis.NewScript(luaColBase + luaFenced + `
if fenced(base .. 'e', ARGV[4]) then return -2 end
local size = #ARGV[3] + redis.call('HSTRLEN', items, ARGV[3])
if redis.call('HDEL', items, ARGV[3]) == 0 then return 0 end
redis.call('DECRBY', bytes, size)
if redis.call('HINCRBY', nbytes, name, -size) <= 0 then redis.call('HDEL', nbytes, name) end
redis.call('ZREM', order, ARGV[3])
redis.call('DECR', total)
if redis.call('HINCRBY', names, name, -1) <= 0 then redis.call('HDEL', names, name) end
return 1
`)

// listItemsScript: ARGV base, name, offset, limit (0: all). Returns
// {total, ids, bodies}.
var listItemsScript = goredis.NewScript(luaColBase + `
local n = redis.call('ZCARD', order)
local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local stop = -1
if limit > 0 then stop = offset + limit - 1 end
local ids = redis.call('ZRANGE', order, offset, stop)
local bodies = {}
for i = 1, #ids, 1000 do
  local part = redis.call('HMGET', items, unpack(ids, i, math.min(i + 999, #ids)))
  for _, b in ipairs(part) do bodies[#bodies + 1] = b end
end
return {n, ids, bodies}
`)

// seedScript: ARGV base, name, bound, byte bound, then id, body pairs.
// Returns 1, or -1 when the items would pass a bound (nothing changed).
var seedScript = goredis.NewScript(luaColBase + `
local seen, n, size = {}, 0, 0
for i = 5, #ARGV, 2 do
  if not seen[ARGV[i]] then n = n + 1 else size = size - #ARGV[i] - seen[ARGV[i]] end
  seen[ARGV[i]] = #ARGV[i + 1]
  size = size + #ARGV[i] + #ARGV[i + 1]
end
local old = redis.call('HLEN', items)
local t = tonumber(redis.call('GET', total) or '0')
if t - old + n > tonumber(ARGV[3]) then return -1 end
local oldSize = tonumber(redis.call('HGET', nbytes, name) or '0')
local used = tonumber(redis.call('GET', bytes) or '0')
if used - oldSize + size > tonumber(ARGV[4]) then return -1 end
redis.call('SET', bytes, used - oldSize + size)
if n == 0 then redis.call('HDEL', nbytes, name) else redis.call('HSET', nbytes, name, size) end
redis.call('UNLINK', items, order)
for i = 5, #ARGV, 2 do
  if redis.call('HSET', items, ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('ZADD', order, redis.call('INCR', seq), ARGV[i])
  end
end
redis.call('SET', total, t - old + n)
if n == 0 then redis.call('HDEL', names, name) else redis.call('HSET', names, name, n) end
return 1
`)

// resetColScript: ARGV base, name ("" for all).
var resetColScript = goredis.NewScript(luaColBase + `
local all = {name}
if name == '' then all = redis.call('HKEYS', names) end
for _, c in ipairs(all) do
  local k = base .. 'o:i:' .. c
  redis.call('DECRBY', total, redis.call('HLEN', k))
  redis.call('DECRBY', bytes, tonumber(redis.call('HGET', nbytes, c) or '0'))
  redis.call('UNLINK', k, base .. 'o:s:' .. c)
  redis.call('HDEL', names, c)
  redis.call('HDEL', nbytes, c)
end
if name == '' then redis.call('DEL', total, names, bytes, nbytes) end
return 0
`)

func (c *redisCollections) Save(ctx context.Context, name, id string, body []byte) (bool, error) {
	n, err := saveScript.Run(ctx, c.r.rdb, c.keys(name), c.r.base, name, id, body, c.r.o.MaxItems, c.r.o.MaxCollectionBytes, fenceArg(ctx)).Int()
	if err != nil {
		return false, fmt.Errorf("state: redis save: %w", err)
	}
	if n == fencedResult {
		return false, c.r.refused(ctx)
	}
	if n < 0 {
		return false, state.ErrFull
	}
	return n == 1, nil
}

// keys lists the keys a collection script touches, for Redis Cluster's
// routing; the scripts build the same names from ARGV.
func (c *redisCollections) keys(name string) []string {
	return []string{c.r.key("o", "i", name), c.r.key("o", "s", name), c.r.key("o", "n"), c.r.key("o", "t"), c.r.key("o", "seq"), c.r.key("o", "b"), c.r.key("o", "nb")}
}

func (c *redisCollections) Load(ctx context.Context, name, id string) ([]byte, bool, error) {
	b, err := c.r.rdb.HGet(ctx, c.r.key("o", "i", name), id).Bytes()
	if err == goredis.Nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("state: redis load: %w", err)
	}
	return b, true, nil
}

func (c *redisCollections) List(ctx context.Context, name string, offset, limit int) ([]state.Item, int, error) {
	res, err := listItemsScript.Run(ctx, c.r.rdb, c.keys(name), c.r.base, name, max(offset, 0), max(limit, 0)).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("state: redis list: %w", err)
	}
	if len(res) != 3 {
		return nil, 0, fmt.Errorf("state: redis list: unexpected reply %v", res)
	}
	total, _ := res[0].(int64)
	ids, _ := res[1].([]any)
	bodies, _ := res[2].([]any)
	out := make([]state.Item, 0, len(ids))
	for i, id := range ids {
		s, _ := id.(string)
		var b string
		if i < len(bodies) {
			b, _ = bodies[i].(string)
		}
		out = append(out, state.Item{ID: s, Body: []byte(b)})
	}
	return out, int(total), nil
}

func (c *redisCollections) Delete(ctx context.Context, name, id string) (bool, error) {
	n, err := deleteScript.Run(ctx, c.r.rdb, c.keys(name), c.r.base, name, id, fenceArg(ctx)).Int()
	if err != nil {
		return false, fmt.Errorf("state: redis delete: %w", err)
	}
	if n == fencedResult {
		return false, c.r.refused(ctx)
	}
	return n == 1, nil
}

func (c *redisCollections) Seed(ctx context.Context, name string, items []state.Item) error {
	args := make([]any, 0, 4+2*len(items))
	args = append(args, c.r.base, name, c.r.o.MaxItems, c.r.o.MaxCollectionBytes)
	for _, it := range items {
		args = append(args, it.ID, it.Body)
	}
	n, err := seedScript.Run(ctx, c.r.rdb, c.keys(name), args...).Int()
	if err != nil {
		return fmt.Errorf("state: redis seed: %w", err)
	}
	if n < 0 {
		return state.ErrFull
	}
	return nil
}

func (c *redisCollections) Reset(ctx context.Context, name string) error {
	if err := resetColScript.Run(ctx, c.r.rdb, c.keys(name), c.r.base, name).Err(); err != nil && err != goredis.Nil {
		return fmt.Errorf("state: redis reset collections: %w", err)
	}
	return nil
}

func (c *redisCollections) Counts(ctx context.Context) ([]state.CollectionCount, error) {
	all, err := c.r.rdb.HGetAll(ctx, c.r.key("o", "n")).Result()
	if err != nil {
		return nil, fmt.Errorf("state: redis counts: %w", err)
	}
	out := make([]state.CollectionCount, 0, len(all))
	for name, v := range all {
		if n, _ := strconv.Atoi(v); n > 0 {
			out = append(out, state.CollectionCount{Name: name, Items: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
