package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/scenariomock/scenariomock/state"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// redisJournal keeps the journal as a Redis stream, j, capped at the
// journal size (XADD MAXLEN, exact, as the memory ring is), so that every
// replica appends to and reads one journal. Entry IDs come from the
// counter j:id, which Clear and Reset keep, and are the stream IDs
// 0-<ID>; each entry is its JSON. An Append publishes on n:j, which
// wakes the waiters of every replica.
//
// Appends are committed in groups: an Append that finds none on its way to
// Redis sends its entry, and those that arrive meanwhile wait and go
// together in the next script call, one round trip for all of them. Each
// Append still returns only once its entry is in Redis (a client that has
// its answer finds its request in the journal), and no goroutine is left
// running between Appends.
type redisJournal struct {
	r *Store

	mu       sync.Mutex
	pending  []*pendingEntry
	flushing bool // an Append is sending groups; the others wait
	// downUntil (Unix nanoseconds): a group failed, and until then
	// Appends fail at once rather than each wait for a Redis that is
	// away: a route that needs no state must not wait on the journal.
	downUntil atomic.Int64
	// seen is the largest entry ID this replica appended, read, or was
	// told of (a message on n:j, Store.appended). Its
	// appends pass it to appendScript as the least the ID counter can be:
	// a Redis that forgot the counter (a restart without persistence)
	// would otherwise number entries from 1 again, which a tail (the
	// dashboard, GET /__admin/requests/stream) waiting after an ID it saw
	// would not show, and since=<id> would mistake for older ones.
	seen atomic.Int64
}

// appended is the subscription's handling of a message on n:j, which
// carries the last ID of an append by any replica: seen follows the
// other replicas' appends too, so that this replica's next append, after
// Redis forgot the counter, goes past theirs.
func (r *Store) appended(payload string) {
	if id, err := strconv.ParseInt(payload, 10, 64); err == nil {
		r.jrnl.noteSeen(id)
	}
}

// noteSeen takes id as seen, unless a larger one was.
func (j *redisJournal) noteSeen(id int64) {
	for {
		old := j.seen.Load()
		if id <= old || j.seen.CompareAndSwap(old, id) {
			return
		}
	}
}

// journalRetry is how long Appends fail at once after a group failed.
const journalRetry = time.Second

// pendingEntry is an entry on its way to Redis.
type pendingEntry struct {
	e     *state.Entry
	json  []byte
	epoch string // fenceArg of the Append's context
	err   error
	done  chan struct{}
}

// errJournalAway is what Append returns while the last group failed
// less than journalRetry ago.
var errJournalAway = errors.New("state: redis journal append: Redis did not answer the last append; not tried again for a second")

// maxAppendGroup bounds the entries of one script call, so that one call
// holds Redis briefly (at 64 KiB bodies, a few MiB at most).
const maxAppendGroup = 64

// appendScript: KEYS stream, id counter, e. ARGV cap, channel, the
// largest ID the replica saw (the counter is less only if Redis forgot
// it), then per entry the epoch its request noted ("" unfenced) and its
// JSON. The entries of the current epoch take consecutive IDs; it returns
// {the first, then the positions (from 1) of the entries fenced off}.
var appendScript = goredis.NewScript(`
local epoch = redis.call('GET', KEYS[3]) or '0'
local keep, out = {}, {0}
for i = 4, #ARGV, 2 do
  if ARGV[i] == '' or ARGV[i] == epoch then
    keep[#keep + 1] = ARGV[i + 1]
  else
    out[#out + 1] = (i - 2) / 2
  end
end
local n = #keep
if n == 0 then return out end
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[3])
end
local last = redis.call('INCRBY', KEYS[2], n)
local first = last - n + 1
for i = 1, n do
  redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-' .. (first + i - 1), 'e', keep[i])
end
redis.call('PUBLISH', ARGV[2], last)
out[1] = first
return out
`)

func (j *redisJournal) Append(ctx context.Context, e *state.Entry) error {
	if time.Now().UnixNano() < j.downUntil.Load() {
		return errJournalAway
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("state: journal entry: %w", err)
	}
	p := &pendingEntry{e: e, json: b, epoch: fenceArg(ctx), done: make(chan struct{})}
	j.mu.Lock()
	j.pending = append(j.pending, p)
	lead := !j.flushing
	j.flushing = true
	j.mu.Unlock()
	if lead {
		// Send groups until none is left, ours first. The round trips
		// serve the waiters too: the caller's cancellation must not cut
		// them short (the client's read timeout bounds each).
		j.flush(context.WithoutCancel(ctx))
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush sends the pending entries, a group at a time, until there are
// none; then it lets the next Append lead.
func (j *redisJournal) flush(ctx context.Context) {
	for {
		j.mu.Lock()
		group := j.pending
		if len(group) > maxAppendGroup {
			group = group[:maxAppendGroup:maxAppendGroup]
		}
		j.pending = j.pending[len(group):]
		if len(group) == 0 {
			j.pending = nil
			j.flushing = false
			j.mu.Unlock()
			return
		}
		j.mu.Unlock()
		args := make([]any, 0, 3+2*len(group))
		args = append(args, j.r.o.JournalSize, j.r.key("n", "j"), j.seen.Load())
		for _, p := range group {
			args = append(args, p.epoch, p.json)
		}
		res, err := appendScript.Run(ctx, j.r.rdb, []string{j.r.key("j"), j.r.key("j", "id"), j.r.key("e")}, args...).Int64Slice()
		if err == nil && len(res) == 0 {
			err = fmt.Errorf("unexpected reply %v", res)
		}
		if err != nil {
			err = fmt.Errorf("state: redis journal append: %w", err)
			j.downUntil.Store(time.Now().Add(journalRetry).UnixNano())
		}
		var next int64
		var skipped []int64 // positions, increasing
		if err == nil {
			next, skipped = res[0], res[1:]
		}
		fenced := len(skipped) > 0
		for i, p := range group {
			switch {
			case err != nil:
				p.err = err
			case len(skipped) > 0 && skipped[0] == int64(i+1):
				p.err, skipped = state.ErrFenced, skipped[1:]
			default:
				p.e.ID = next
				j.noteSeen(next)
				next++
			}
			close(p.done)
		}
		if fenced {
			_ = j.r.refreshEpoch(ctx) // the replica's copy may be behind
		}
	}
}

func (j *redisJournal) Entries(ctx context.Context, after int64) ([]state.Entry, error) {
	return j.Page(ctx, after, 0)
}

// Page is Entries with at most limit entries (XRANGE COUNT); 0 for all.
func (j *redisJournal) Page(ctx context.Context, after int64, limit int) ([]state.Entry, error) {
	start := "-"
	if after > 0 {
		start = "(0-" + strconv.FormatInt(after, 10)
	}
	var msgs []goredis.XMessage
	var err error
	if limit > 0 {
		msgs, err = j.r.rdb.XRangeN(ctx, j.r.key("j"), start, "+", int64(limit)).Result()
	} else {
		msgs, err = j.r.rdb.XRange(ctx, j.r.key("j"), start, "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("state: redis journal: %w", err)
	}
	out := make([]state.Entry, 0, len(msgs))
	for _, m := range msgs {
		var e state.Entry
		raw, _ := m.Values["e"].(string)
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("state: redis journal entry %s: %w", m.ID, err)
		}
		_, seq, _ := strings.Cut(m.ID, "-")
		e.ID, _ = strconv.ParseInt(seq, 10, 64)
		j.noteSeen(e.ID)
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
		// The newest entry kept, not the ID counter: IDs past after that
		// were cleared do not count, or a tail would spin.
		var last int64
		newest, err := j.r.rdb.XRevRangeN(ctx, j.r.key("j"), "+", "-", 1).Result()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Redis is away: wait for it like for an entry, bounded.
			last = after
		case len(newest) > 0:
			_, seq, _ := strings.Cut(newest[0].ID, "-")
			last, _ = strconv.ParseInt(seq, 10, 64)
			j.noteSeen(last)
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
