package statetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

// documents tests the runtime scenario documents of a store that has them.
func (h *harness) documents(t *testing.T) {
	s, _ := h.open(t, state.Options{})
	ds, ok := s.(state.DocumentStore)
	if !ok {
		t.Skip("the store keeps no runtime documents")
	}
	d := ds.Documents()
	docIDs := func() ([]string, int64) {
		t.Helper()
		list, v, err := d.List(ctx)
		must(t, err)
		var out []string
		for _, doc := range list {
			out = append(out, doc.ID+"="+string(doc.Data))
		}
		return out, v
	}
	_, v0 := docIDs()
	must(t, d.Add(ctx, state.Document{ID: "b", Data: []byte("routes: [1]")}))
	must(t, d.Add(ctx, state.Document{ID: "a", Data: []byte("routes: [2]")}))
	if err := d.Add(ctx, state.Document{ID: "a", Data: []byte("x")}); !errors.Is(err, state.ErrDocumentExists) {
		t.Fatalf("Add of an id kept = %v, want ErrDocumentExists", err)
	}
	got, v1 := docIDs()
	if fmt.Sprint(got) != "[b=routes: [1] a=routes: [2]]" || v1 == v0 {
		t.Fatalf("List = %v at version %d (was %d), want b then a at a new version", got, v1, v0)
	}
	// Reset forgets what requests did, not the configuration.
	must(t, s.Reset(ctx))
	if got, _ := docIDs(); len(got) != 2 {
		t.Fatalf("after Reset: %v, want both documents", got)
	}

	// Wait returns at once for an old version, and on a change made
	// meanwhile (as by another replica).
	must(t, d.Wait(ctx, v0))
	done := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() { done <- d.Wait(wctx, v1) }()
	if ok, err := d.Remove(ctx, "b"); !ok || err != nil {
		t.Fatalf("Remove(b) = %v, %v; want true", ok, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Wait across a Remove: %v", err)
	}
	if ok, err := d.Remove(ctx, "b"); ok || err != nil {
		t.Fatalf("second Remove(b) = %v, %v; want false", ok, err)
	}
	if got, _ := docIDs(); fmt.Sprint(got) != "[a=routes: [2]]" {
		t.Fatalf("after Remove: %v", got)
	}
	if n, err := d.Clear(ctx); n != 1 || err != nil {
		t.Fatalf("Clear = %d, %v; want 1", n, err)
	}
	// Wait ends with its context when nothing changes.
	_, v := docIDs()
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := d.Wait(short, v); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with nothing changing = %v, want the deadline", err)
	}

	// The bound.
	for i := range state.MaxDocuments {
		must(t, d.Add(ctx, state.Document{ID: fmt.Sprint("d", i), Data: []byte("x")}))
	}
	if err := d.Add(ctx, state.Document{ID: "one more", Data: []byte("x")}); !errors.Is(err, state.ErrDocumentsFull) {
		t.Fatalf("Add past the bound = %v, want ErrDocumentsFull", err)
	}
	if n, err := d.Clear(ctx); n != state.MaxDocuments || err != nil {
		t.Fatalf("Clear = %d, %v", n, err)
	}
}

// replicas tests state.Replicas, which stores that replicas share have:
// a change waits for every live replica, not for one that left or whose
// time ran out.
func (h *harness) replicas(t *testing.T) {
	s, _ := h.open(t, state.Options{})
	ds, ok := s.(state.DocumentStore)
	if !ok {
		t.Skip("the store keeps no runtime documents")
	}
	rs, ok := ds.Documents().(state.Replicas)
	if !ok {
		t.Skip("the store is one process's: it has one replica")
	}
	behind := func(version int64) bool {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := rs.AllServing(short, version)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AllServing(%d) = %v", version, err)
		}
		return err != nil
	}
	must(t, rs.AllServing(ctx, 7)) // no replica: nothing to wait for
	must(t, rs.Serving(ctx, "a", 5, time.Minute))
	must(t, rs.Serving(ctx, "b", 3, time.Minute))
	if !behind(4) {
		t.Fatal("AllServing(4) returned with b at 3")
	}
	must(t, rs.AllServing(ctx, 3))
	done := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() { done <- rs.AllServing(wctx, 4) }()
	must(t, rs.Serving(ctx, "b", 4, time.Minute))
	if err := <-done; err != nil {
		t.Fatalf("AllServing(4) across b's Serving(4): %v", err)
	}
	// A replica that left, and one whose time ran out, are not waited for.
	must(t, rs.Leave(ctx, "a"))
	must(t, rs.Serving(ctx, "b", 4, time.Millisecond))
	for deadline := time.Now().Add(10 * time.Second); behind(9); {
		if time.Now().After(deadline) {
			t.Fatal("AllServing(9) still waits for b, whose time ran out, and a, which left")
		}
	}
}
