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
type memCollections struct {
	mu     sync.Mutex // guards byName and total
	byName map[string]*collection
	total  int // items over all collections
	limit  int
}

// collection is one named collection; memCollections.mu guards it.
type collection struct {
	byID  map[string]*Item
	order []*Item // insertion order
}

func (c *memCollections) Save(_ context.Context, name, id string, body []byte) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	col := c.byName[name]
	if col != nil {
		if it := col.byID[id]; it != nil {
			it.Body = slices.Clone(body)
			return false, nil
		}
	}
	if c.total >= c.limit {
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

func (c *memCollections) Delete(_ context.Context, name, id string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	if len(col.order) == 0 {
		delete(c.byName, name)
	}
	return true, nil
}

func (c *memCollections) Seed(_ context.Context, name string, items []Item) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := 0
	if col := c.byName[name]; col != nil {
		old = len(col.order)
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
	if c.total-old+len(col.order) > c.limit {
		return ErrFull
	}
	c.total += len(col.order) - old
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
		c.byName, c.total = map[string]*collection{}, 0
		return nil
	}
	if col := c.byName[name]; col != nil {
		c.total -= len(col.order)
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
