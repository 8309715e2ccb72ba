package state

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisJournal keeps the journal as a Redis stream, j, capped at the
// journal size (XADD MAXLEN, exact, as the memory ring is), so that every
// replica appends to and reads one journal. Entry IDs come from the
// counter j:id, which Clear and Reset keep, and are the stream IDs
// 0-<ID>; each entry is its JSON. An Append publishes on n:j, which
// wakes the waiters of every replica.
type redisJournal struct{ r *Redis }

// appendScript: KEYS stream, id counter. ARGV entry JSON, cap, channel.
// Returns the entry's ID.
var appendScript = redis.NewScript(`
local id = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '0-' .. id, 'e', ARGV[1])
redis.call('PUBLISH', ARGV[3], id)
return id
`)

func (j *redisJournal) Append(ctx context.Context, e *Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("state: journal entry: %w", err)
	}
	id, err := appendScript.Run(ctx, j.r.rdb, []string{j.r.key("j"), j.r.key("j", "id")}, b, j.r.o.JournalSize, j.r.key("n", "j")).Int64()
	if err != nil {
		return fmt.Errorf("state: redis journal append: %w", err)
	}
	e.ID = id
	return nil
}

func (j *redisJournal) Entries(ctx context.Context, after int64) ([]Entry, error) {
	start := "-"
	if after > 0 {
		start = "(0-" + strconv.FormatInt(after, 10)
	}
	msgs, err := j.r.rdb.XRange(ctx, j.r.key("j"), start, "+").Result()
	if err != nil {
		return nil, fmt.Errorf("state: redis journal: %w", err)
	}
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		var e Entry
		raw, _ := m.Values["e"].(string)
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("state: redis journal entry %s: %w", m.ID, err)
		}
		_, seq, _ := strings.Cut(m.ID, "-")
		e.ID, _ = strconv.ParseInt(seq, 10, 64)
		out = append(out, e)
	}
	return out, nil
}

func (j *redisJournal) Clear(ctx context.Context) error {
	if err := j.r.rdb.Unlink(ctx, j.r.key("j")).Err(); err != nil {
		return fmt.Errorf("state: redis journal clear: %w", err)
	}
	return nil
}

func (j *redisJournal) Wait(ctx context.Context, after int64) error {
	for {
		wake := j.r.notify.wait(j.r.key("n", "j"))
		last, err := j.r.rdb.Get(ctx, j.r.key("j", "id")).Int64()
		if err != nil && err != redis.Nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Redis is away: wait for it like for an entry, bounded.
			last = after
		}
		if last > after {
			return nil
		}
		if j.r.notify.closed() {
			return fmt.Errorf("state: redis journal: store closed")
		}
		if !sleep(ctx, wake) {
			return ctx.Err()
		}
	}
}
