package state

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
)

// memCounters keeps named counters. Names may come from requests
// (`seq .Request.Vars.id` passes validation), so they are bounded: at
// most limit names of at most MaxCounterName bytes; a new name past the
// bound is refused with ErrCountersFull rather than evicting one (an
// evicted counter would start over at 1 and hand out ids twice).
type memCounters struct {
	byName sync.Map   // name → *atomic.Int64; read on every use
	mu     sync.Mutex // serializes adding and removing names, and guards n
	n      int        // names in byName
	limit  int
	fence  *fence
}

func (c *memCounters) Next(ctx context.Context, name string) (int64, error) {
	v, ok := c.byName.Load(name)
	// The epoch is checked after the counter is found: Reset moves it
	// before it forgets names, so a counter found before the check is
	// either one Reset has yet to forget (or forgot: an increment of it is
	// lost with it) or one made since, which the check then refuses.
	if !c.fence.admits(ctx) {
		return 0, ErrFenced
	}
	if !ok {
		if len(name) > MaxCounterName {
			return 0, ErrCounterName
		}
		c.mu.Lock()
		if v, ok = c.byName.Load(name); !ok {
			if !c.fence.admits(ctx) {
				c.mu.Unlock()
				return 0, ErrFenced
			}
			if c.n >= c.limit {
				c.mu.Unlock()
				return 0, ErrCountersFull
			}
			v = new(atomic.Int64)
			c.byName.Store(name, v)
			c.n++
		}
		c.mu.Unlock()
	}
	return v.(*atomic.Int64).Add(1), nil
}

func (c *memCounters) List(ctx context.Context) ([]Counter, error) {
	out, _, err := c.Page(ctx, 0, 0)
	return out, err
}

var _ CounterPager = (*memCounters)(nil)

func (c *memCounters) Page(_ context.Context, offset, limit int) ([]Counter, int, error) {
	// The names are bounded (limit), so sorting them all for one page
	// costs at most a few milliseconds; the page is what is copied out.
	var names []string
	c.byName.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	sort.Strings(names)
	total := len(names)
	from, to := pageBounds(offset, limit, total)
	out := make([]Counter, 0, to-from)
	for _, name := range names[from:to] {
		if v, ok := c.byName.Load(name); ok {
			out = append(out, Counter{Name: name, Value: v.(*atomic.Int64).Load()})
		}
	}
	return out, total, nil
}

func (c *memCounters) Reset(_ context.Context, name string) error {
	// Names are forgotten, not zeroed, so that a reset gives back the
	// room of names a request made up. An increment racing with the
	// reset may land in the forgotten counter: a request in flight
	// during a reset is the reset's race, not a counter's.
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byName.Range(func(k, _ any) bool {
		if name == "" || k.(string) == name {
			c.byName.Delete(k)
			c.n--
		}
		return true
	})
	return nil
}

// pageBounds returns the slice bounds of the page at offset of at most
// limit (0: all) of total elements.
func pageBounds(offset, limit, total int) (from, to int) {
	from = min(max(offset, 0), total)
	to = total
	if limit > 0 {
		to = min(from+limit, total)
	}
	return from, to
}
