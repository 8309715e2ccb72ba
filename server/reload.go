package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/scenariomock/scenariomock/matcher"
	"github.com/scenariomock/scenariomock/scenarios"
	"github.com/scenariomock/scenariomock/state"
)

// Reload loads the scenarios again and makes them current. On error the
// old snapshot keeps serving and the error is kept for the admin API. A
// reload that reads exactly what the current snapshot was built from does
// nothing. Reload returns when a reload that started after it was called
// has finished, or when shutdown begins (errReloadPending). It is safe for
// concurrent use: calls made while a reload runs share the next one.
func (s *Server) Reload() error { return s.ReloadContext(context.Background()) }

// ReloadContext is Reload, giving up (errReloadPending) when ctx ends; the
// reload itself goes on and its outcome shows in the admin API.
func (s *Server) ReloadContext(ctx context.Context) error {
	c := s.requestReload()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errReloadPending, context.Cause(ctx))
	case <-s.stopping.Done():
		return fmt.Errorf("%w: %w", errReloadPending, context.Cause(s.stopping))
	}
}

// errReloadPending: a caller stopped waiting for a reload that still runs.
var errReloadPending = errors.New("reload still running")

// reloads merges concurrent reload requests. At most one reload runs; a
// request made while it runs joins the next one, which starts when it
// ends, so that every caller sees the files as they were when it asked
// (the running reload may have read them before) and twenty callers cost
// two loads, not twenty. A goroutine of the server runs the reloads, not
// a caller, so that a caller can stop waiting: a loader stuck on I/O then
// holds only that goroutine, which ends once no reload is pending.
type reloads struct {
	mu      sync.Mutex // guards running and next
	running bool
	next    *reloadCall // the reload to start when the running one ends
}

// reloadCall is one reload and the callers waiting for it.
type reloadCall struct {
	done    chan struct{}
	err     error // set before done is closed
	callers int   // guarded by reloads.mu
}

// requestReload returns the reload that will run next, starting the
// goroutine that runs reloads if none runs.
func (s *Server) requestReload() *reloadCall {
	rl := &s.reloads
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.next == nil {
		rl.next = &reloadCall{done: make(chan struct{})}
	}
	c := rl.next
	c.callers++
	if !rl.running {
		rl.running = true
		go s.runReloads()
	}
	return c
}

// runReloads runs pending reloads one after the other and ends when none
// is pending.
func (s *Server) runReloads() {
	rl := &s.reloads
	for {
		rl.mu.Lock()
		c := rl.next
		rl.next = nil
		if c == nil {
			rl.running = false
		}
		callers := 0
		if c != nil {
			callers = c.callers
		}
		rl.mu.Unlock()
		if c == nil {
			return
		}
		if callers > 1 {
			s.log.Debug("reload requests merged", "requests", callers)
		}
		c.err = s.reload()
		close(c.done)
	}
}

// reload is one reload; runReloads makes sure only one runs at a time.
// It builds the table from the files and the runtime documents on top of
// them (runtime.go). When only the documents changed, the files are not
// read again; when the files do not load, or load but clash with the
// documents (a route name both use), documents that changed are laid on
// the last good files, so that a test's POST does not wait for a broken
// edit to be fixed (the file error is still reported).
func (s *Server) reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	now := s.opts.Clock.Now()
	docs, docsVersion := s.listDocuments()
	docsSame := docsVersion == s.docsVersion
	healthy := s.status.Load().err == nil
	var set *scenarios.Set
	var fileErr error
	if s.opts.Hash != nil && healthy {
		// Files unchanged since the current snapshot: nothing to parse.
		if h, err := s.opts.Hash(); err == nil && h == s.lastHash {
			if docsSame {
				return nil
			}
			set = s.files
		}
	}
	if set == nil {
		set, fileErr = s.opts.Load()
		if fileErr == nil && set.Hash == s.lastHash && docsSame && healthy {
			return nil
		}
		if fileErr != nil {
			// A loader may return part of a set with its error: never
			// served. Changed documents go on the last good files.
			set = nil
			if !docsSame {
				set = s.files
			}
		}
	}
	old := s.snap.Load()
	var t *matcher.Table
	var merged *scenarios.Set
	var rdocs []*runtimeDoc
	err := fileErr
	kept := false // changed documents laid on the last good files
	if set != nil {
		var derr error
		t, merged, rdocs, derr = s.layDocs(set, docs)
		if derr != nil && fileErr == nil && !docsSame && s.files != nil && set != s.files {
			// The files load but not with the documents (an edit took a
			// name a document's route has): as when they do not load,
			// changed documents go on the last good files, and the edit's
			// error is reported.
			if t, merged, rdocs, _ = s.layDocs(s.files, docs); t != nil {
				kept, set = true, s.files
			}
		}
		if derr != nil {
			err = errors.Join(fileErr, derr) // reported, and served only if kept
		}
	}
	if t != nil {
		if fileErr == nil && !kept {
			s.lastHash, s.files = set.Hash, set
		}
		gone := deadGroups(s.runtime, merged)
		s.runtime, s.docsVersion = rdocs, docsVersion
		s.swap(t, merged, old, now)
		s.forgetGroups(gone)
		s.announceServed(docsVersion) // served from here on
	}
	if err != nil {
		st := &reloadStatus{at: now, err: err}
		for _, p := range scenarios.Problems(err) {
			st.problems = append(st.problems, p.Error())
		}
		s.status.Store(st)
		for _, p := range st.problems {
			s.log.Error("scenario error", "problem", p)
		}
		s.log.Error("reload failed; the last good scenarios keep serving", "version", s.snap.Load().version, "problems", len(st.problems))
		return err
	}
	s.status.Store(&reloadStatus{at: now})
	s.log.Info("reloaded", "version", s.snap.Load().version, "files", len(set.Files), "runtime", len(rdocs), "routes", len(s.snap.Load().routes))
	return nil
}

// layDocs lays docs on files and compiles the table. The caller holds
// reloadMu.
func (s *Server) layDocs(files *scenarios.Set, docs []state.Document) (*matcher.Table, *scenarios.Set, []*runtimeDoc, error) {
	rdocs, err := s.parseDocuments(docs)
	merged, err := overlayDocs(files, rdocs, err)
	var t *matcher.Table
	if err == nil {
		t, err = matcher.Compile(merged)
	}
	if err == nil {
		err = s.checkLoops(merged.Routes())
	}
	if err == nil {
		err = s.seed(context.Background(), merged, false)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return t, merged, rdocs, nil
}

// swap makes t current. The caller holds reloadMu.
func (s *Server) swap(t *matcher.Table, set *scenarios.Set, old *snapshot, now time.Time) {
	snap := s.build(t, old.version+1, now)
	s.snap.Store(snap)
	s.configureWebhooks(set)
	ids := make([]string, len(snap.routes))
	for i, rt := range snap.routes {
		ids[i] = rt.route.Identity
	}
	// A route whose definition changed has a new identity and starts its
	// sequence over; idempotency keys, counters and collections are not
	// tied to routes and stay.
	if err := s.state.Sequences().Retain(context.Background(), ids); err != nil {
		s.log.Warn("sequence state of removed routes not forgotten", "error", err.Error())
	}
}

// deadGroups returns the idempotency groups of the routes of the runtime
// documents served until now (old) that no route of set uses: those of a
// document removed, unless a file or another document shares them.
func deadGroups(old []*runtimeDoc, set *scenarios.Set) []string {
	var dead []string
	for _, d := range old {
		for _, r := range d.set.Routes() {
			if r.Idempotency != nil && !slices.Contains(dead, r.Idempotency.Group) {
				dead = append(dead, r.Idempotency.Group)
			}
		}
	}
	if len(dead) == 0 {
		return nil
	}
	for _, r := range set.Routes() {
		if r.Idempotency != nil {
			dead = slices.DeleteFunc(dead, func(g string) bool { return g == r.Idempotency.Group })
		}
	}
	return dead
}

// forgetGroups forgets the keys of the groups that a removed runtime
// document took away. Unlike a file's routes, whose keys outlive a
// reload, a document is a test's: kept, its keys would answer the next
// test that adds the same stub (the same session, or go test -count=2)
// with this one's stored answers, a replay or a 422 mismatch.
func (s *Server) forgetGroups(groups []string) {
	for _, g := range groups {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n, err := s.state.Idempotency().Expire(ctx, g, "")
		cancel()
		if err != nil {
			s.log.Warn("idempotency keys of a removed runtime document not forgotten", "group", g, "error", err.Error())
			continue
		}
		if n > 0 {
			s.log.Info("idempotency keys of a removed runtime document forgotten", "group", g, "keys", n)
		}
	}
}

// seedHashes identifies each seeded collection's items, so that a reload
// re-seeds only a collection whose seed changed.
func seedHashes(set *scenarios.Set) map[string]string {
	out := map[string]string{}
	for _, sd := range set.Seeds {
		h := sha256.New()
		for _, it := range sd.Items {
			fmt.Fprintf(h, "%d:%s%d:", len(it.ID), it.ID, len(it.Body))
			h.Write(it.Body)
		}
		out[sd.Name] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// seedForgotten seeds the collections again each time the shared store
// says it forgot everything (a Redis restarted without persistence), as
// a restart of a single process would: before, a seeded item was a 404
// on every replica until a POST /__admin/reset. Items created since stay.
// It returns, closing done, when shutdown begins.
func (s *Server) seedForgotten(forgotten <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-s.stopping.Done():
			return
		case <-forgotten:
		}
		s.reloadMu.Lock()
		s.seeded = nil // every seeded collection is gone
		err := s.seed(s.stopping, s.snap.Load().table.Set(), false)
		s.reloadMu.Unlock()
		if err != nil {
			s.log.Warn("the state store forgot its state; collections not seeded again", "error", err.Error())
			continue
		}
		s.log.Warn("the state store forgot its state (a Redis restart without persistence?); collections seeded again")
	}
}

// seed fills the seeded collections of set. With replace (startup and
// POST /__admin/reset) each collection becomes exactly its seed. Otherwise
// (a reload) only a collection whose seed changed since the last seeding
// is touched, and then its seeded items are saved again over whatever
// they became, while items created at run time stay: a reload after
// editing an unrelated route must not undo a test's payments. The caller
// holds reloadMu.
func (s *Server) seed(ctx context.Context, set *scenarios.Set, replace bool) error {
	hashes := seedHashes(set)
	cols := s.state.Collections()
	var errs []error
	for _, sd := range set.Seeds {
		if !replace && s.seeded[sd.Name] == hashes[sd.Name] {
			continue
		}
		var err error
		if replace {
			items := make([]state.Item, len(sd.Items))
			for i, it := range sd.Items {
				items[i] = state.Item{ID: it.ID, Body: it.Body}
			}
			err = cols.Seed(ctx, sd.Name, items)
		} else {
			for _, it := range sd.Items {
				if _, err = cols.Save(ctx, sd.Name, it.ID, it.Body); err != nil {
					break
				}
			}
		}
		if err != nil {
			if errors.Is(err, state.ErrFull) {
				err = fmt.Errorf("its %d items would pass the limit of %d items in all collections (--max-collection-items)", len(sd.Items), s.opts.MaxCollectionItems)
			}
			// A scenario error, so that the admin API and the log show it
			// with the file's other problems.
			errs = append(errs, &scenarios.Error{Pos: sd.Pos, Msg: fmt.Sprintf("collections: %s: not seeded: %v", sd.Name, err)})
			delete(hashes, sd.Name) // try again at the next reload
		}
	}
	s.seeded = hashes
	return errors.Join(errs...)
}
