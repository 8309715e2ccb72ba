package state

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
)

// memCounters keeps named counters. Names come from scenario files, not
// from requests, so they need no bound.
type memCounters struct {
	byName sync.Map // name → *atomic.Int64; read on every use, written once per name
}

func (c *memCounters) Next(_ context.Context, name string) (int64, error) {
	v, ok := c.byName.Load(name)
	if !ok {
		v, _ = c.byName.LoadOrStore(name, new(atomic.Int64))
	}
	return v.(*atomic.Int64).Add(1), nil
}

func (c *memCounters) List(context.Context) ([]Counter, error) {
	out := []Counter{}
	c.byName.Range(func(k, v any) bool {
		out = append(out, Counter{Name: k.(string), Value: v.(*atomic.Int64).Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c *memCounters) Reset(_ context.Context, name string) error {
	// Zero in place rather than deleting: an increment racing with the
	// reset then lands in the counter the next call reads.
	c.byName.Range(func(k, v any) bool {
		if name == "" || k.(string) == name {
			v.(*atomic.Int64).Store(0)
		}
		return true
	})
	return nil
}
