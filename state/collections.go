package state

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
)

// memCollections keeps stored bodies. One lock for all collections:
// saving a resource is far rarer than matching a request, and one lock
// keeps the bound (over all collections) exact.
//
// Besides the count of items, the bytes of ids and bodies are bounded
// (Options.MaxCollectionBytes): a save past either bound is refused with
// ErrFull (507), never made room for by dropping an item, because a
// dropped item would turn a later GET of it into a 404 the client did not
// cause.
type memCollections struct {
	mu       sync.Mutex // guards byName, total and bytes
	byName   map[string]*collection
	total    int   // items over all collections
	bytes    int64 // ids and bodies over all collections
	limit    int
	maxBytes int64
	fence    *fence
}

// itemBytes is what an item counts against the byte bound.
func itemBytes(id string, body []byte) int64 { return int64(len(id) + len(body)) }

// collection is one named collection; memCollections.mu guards it.
type collection struct {
	byID  map[string]*Item
	order []*Item // insertion order
}

func (c *memCollections) Save(ctx context.Context, name, id string, body []byte) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fence.admits(ctx) {
		return false, ErrFenced
	}
	col := c.byName[name]
	if col != nil {
		if it := col.byID[id]; it != nil {
			grown := int64(len(body) - len(it.Body))
			if grown > 0 && c.bytes+grown > c.maxBytes {
				return false, ErrFull
			}
			it.Body = slices.Clone(body)
			c.bytes += grown
			return false, nil
		}
	}
	if c.total >= c.limit || c.bytes+itemBytes(id, body) > c.maxBytes {
		return false, ErrFull
	}
	if col == nil {
		col = &collection{byID: map[string]*Item{}}
		c.byName[strings.Clone(name)] = col
	}
	it := &Item{ID: strings.Clone(id), Body: slices.Clone(body)}
	col.byID[it.ID] = it
	col.order = append(col.order, it)
	c.total++
	c.bytes += itemBytes(it.ID, it.Body)
	return true, nil
}

func (c *memCollections) Load(_ context.Context, name, id string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if col := c.byName[name]; col != nil {
		if it := col.byID[id]; it != nil {
			return it.Body, true, nil
		}
	}
	return nil, false, nil
}

func (c *memCollections) List(_ context.Context, name string, offset, limit int) ([]Item, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	col := c.byName[name]
	if col == nil {
		return []Item{}, 0, nil
	}
	total := len(col.order)
	offset = min(max(offset, 0), total)
	end := total
	if limit > 0 {
		end = min(offset+limit, total)
	}
	out := make([]Item, 0, end-offset)
	for _, it := range col.order[offset:end] {
		out = append(out, *it)
	}
	return out, total, nil
}

func (c *memCollections) Delete(ctx context.Context, name, id string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fence.admits(ctx) {
		return false, ErrFenced
	}
	col := c.byName[name]
	if col == nil {
		return false, nil
	}
	it := col.byID[id]
	if it == nil {
		return false, nil
	}
	delete(col.byID, id)
	// A linear removal keeps List a plain slice; deletes are rare and a
	// full collection is 800 KB of pointers to move at worst.
	col.order = slices.DeleteFunc(col.order, func(x *Item) bool { return x == it })
	c.total--
	c.bytes -= itemBytes(it.ID, it.Body)
	if len(col.order) == 0 {
		delete(c.byName, name)
	}
	return true, nil
}

func (c *memCollections) Seed(_ context.Context, name string, items []Item) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, oldBytes := 0, int64(0)
	if col := c.byName[name]; col != nil {
		old, oldBytes = len(col.order), col.bytes()
	}
	col := &collection{byID: make(map[string]*Item, len(items))}
	for _, in := range items {
		// A repeated id keeps its first position and its last body, as
		// saving the items one by one would.
		if it := col.byID[in.ID]; it != nil {
			it.Body = slices.Clone(in.Body)
			continue
		}
		it := &Item{ID: strings.Clone(in.ID), Body: slices.Clone(in.Body)}
		col.byID[it.ID] = it
		col.order = append(col.order, it)
	}
	if c.total-old+len(col.order) > c.limit || c.bytes-oldBytes+col.bytes() > c.maxBytes {
		return ErrFull
	}
	c.total += len(col.order) - old
	c.bytes += col.bytes() - oldBytes
	if len(col.order) == 0 {
		delete(c.byName, name)
	} else {
		c.byName[strings.Clone(name)] = col
	}
	return nil
}

func (c *memCollections) Reset(_ context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name == "" {
		c.byName, c.total, c.bytes = map[string]*collection{}, 0, 0
		return nil
	}
	if col := c.byName[name]; col != nil {
		c.total -= len(col.order)
		c.bytes -= col.bytes()
		delete(c.byName, name)
	}
	return nil
}

func (c *memCollections) Counts(context.Context) ([]CollectionCount, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]CollectionCount, 0, len(c.byName))
	for name, col := range c.byName {
		out = append(out, CollectionCount{Name: name, Items: len(col.order)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// bytes is what the collection's items count against the byte bound.
func (col *collection) bytes() int64 {
	var n int64
	for _, it := range col.order {
		n += itemBytes(it.ID, it.Body)
	}
	return n
}

// Bytes returns the bytes of ids and bodies stored in all collections.
func (c *memCollections) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
