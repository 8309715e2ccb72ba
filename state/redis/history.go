package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/webhooks"
)

// redisHistory is the webhook attempt log and the finished deliveries
// that replicas share, so that any replica's admin API lists them all.
// Keys (under the store's prefix and {state} hash tag): w:a and w:f,
// lists of "<seq> <JSON>" trimmed to the newest limit entries, and w:n,
// the sequence of attempts across the replicas.
type redisHistory struct {
	r     *Store
	limit int
}

// History returns the webhook history in Redis that every replica on
// this prefix shares, keeping the last limit attempts and finished
// deliveries (10,000 each when limit is 0 or less). It is safe for
// concurrent use.
func (r *Store) History(limit int) webhooks.History {
	if limit <= 0 {
		limit = 10_000
	}
	return &redisHistory{r: r, limit: limit}
}

// historyRecordScript: KEYS n, a, f. ARGV limit, attempt JSON, delivery
// JSON or "". Returns the attempt's sequence number.
var historyRecordScript = goredis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local keep = -tonumber(ARGV[1])
redis.call('RPUSH', KEYS[2], n .. ' ' .. ARGV[2])
redis.call('LTRIM', KEYS[2], keep, -1)
if ARGV[3] ~= '' then
  redis.call('RPUSH', KEYS[3], n .. ' ' .. ARGV[3])
  redis.call('LTRIM', KEYS[3], keep, -1)
end
return n
`)

func (h *redisHistory) Record(ctx context.Context, a *webhooks.Attempt, d *webhooks.Delivery) (int64, error) {
	aj, err := json.Marshal(a)
	if err != nil {
		return 0, err
	}
	var dj []byte
	if d != nil {
		if dj, err = json.Marshal(d); err != nil {
			return 0, err
		}
	}
	n, err := historyRecordScript.Run(ctx, h.r.rdb, []string{h.r.key("w", "n"), h.r.key("w", "a"), h.r.key("w", "f")},
		h.limit, aj, dj).Int64()
	if err != nil {
		return 0, fmt.Errorf("state: redis webhook history record: %w", err)
	}
	return n, nil
}

// entries reads a history list; each entry's sequence number is given
// to set.
func entries[T any](ctx context.Context, h *redisHistory, key string, set func(*T, int64)) ([]T, error) {
	raw, err := h.r.rdb.LRange(ctx, h.r.key("w", key), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("state: redis webhook history: %w", err)
	}
	out := make([]T, 0, len(raw))
	for _, e := range raw {
		seq, j, ok := strings.Cut(e, " ")
		n, err := strconv.ParseInt(seq, 10, 64)
		var v T
		if !ok || err != nil || json.Unmarshal([]byte(j), &v) != nil {
			return nil, fmt.Errorf("state: redis webhook history: an entry of %s is not one", key)
		}
		set(&v, n)
		out = append(out, v)
	}
	return out, nil
}

func (h *redisHistory) Attempts(ctx context.Context) ([]webhooks.Attempt, error) {
	return entries(ctx, h, "a", func(a *webhooks.Attempt, n int64) { a.Seq = n })
}

func (h *redisHistory) Finished(ctx context.Context) ([]webhooks.Delivery, error) {
	return entries(ctx, h, "f", func(*webhooks.Delivery, int64) {})
}

func (h *redisHistory) Reset(ctx context.Context) error {
	if err := h.r.rdb.Del(ctx, h.r.key("w", "a"), h.r.key("w", "f")).Err(); err != nil {
		return fmt.Errorf("state: redis webhook history reset: %w", err)
	}
	return nil
}
