package state

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
)

// States keeps the route states (a route's state: block): one value per
// StateKey, moved by the requests of routes with to: and by the admin
// API, and read by the routes with is:, as WireMock's scenarios are. A
// state never set is StateStarted. Implementations are safe for
// concurrent use.
type States interface {
	// Get returns the state's value, StateStarted when it was never set.
	Get(ctx context.Context, k StateKey) (string, error)
	// Set makes value the state's value. It is a fenced write (fence.go).
	// A key not kept yet, when Options.MaxStates are, fails with
	// ErrStatesFull; so does a key or value longer than MaxStatePart.
	Set(ctx context.Context, k StateKey, value string) error
	// List returns the states f selects that were set, by session, name
	// and key.
	List(ctx context.Context, f StateFilter) ([]StateValue, error)
	// Reset forgets the states f selects (they are StateStarted again)
	// and returns how many it forgot.
	Reset(ctx context.Context, f StateFilter) (int, error)
}

// StateStarted is the value of a state never set, WireMock's initial
// scenario state.
const StateStarted = "Started"

// StateKey names one route state.
type StateKey struct {
	// Session is the test session of the routes that share the state
	// ("" for routes of no session): two parallel tests' states are
	// their own, as their sequences are.
	Session string
	// Name is the state: block's name:.
	Name string
	// Key is what its per: rendered, "" for a state without one.
	Key string
}

// StateValue is one state that was set.
type StateValue struct {
	StateKey
	Value string
}

// StateFilter selects states: those of Session (any session with
// AnySession), named Name ("" for any name), of Key (any key with
// AnyKey).
type StateFilter struct {
	Session    string
	AnySession bool
	Name       string
	Key        string
	AnyKey     bool
}

// Selects reports whether f selects k.
func (f StateFilter) Selects(k StateKey) bool {
	return (f.AnySession || k.Session == f.Session) && (f.Name == "" || k.Name == f.Name) && (f.AnyKey || k.Key == f.Key)
}

// MaxStatePart bounds a state's key and value, in bytes: a key comes
// from a request.
const MaxStatePart = 1024

// ErrStatesFull is returned by States.Set for a key it does not keep yet
// when it already keeps Options.MaxStates, or for a key or a value longer
// than MaxStatePart. Reset makes room.
var ErrStatesFull = errors.New("state: too many route states (the bound is --max-states; POST /__admin/reset forgets them), or a key or value longer than 1024 bytes")

// SortStates orders states by session, name and key, for List.
func SortStates(vs []StateValue) {
	slices.SortFunc(vs, func(a, b StateValue) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Key, b.Key))
	})
}

// memStates keeps route states in a map. Keys come from requests, so
// they are bounded: past limit a new key is refused (ErrStatesFull)
// rather than one forgotten, which would move its state back to Started
// behind a test's back.
type memStates struct {
	mu     sync.Mutex // guards values
	values map[StateKey]string
	limit  int
	fence  *fence
}

func (s *memStates) Get(_ context.Context, k StateKey) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.values[k]; ok {
		return v, nil
	}
	return StateStarted, nil
}

func (s *memStates) Set(ctx context.Context, k StateKey, value string) error {
	if len(k.Key) > MaxStatePart || len(value) > MaxStatePart {
		return ErrStatesFull
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Under the lock that Reset takes: a write either lands before a
	// Reset, which forgets it, or is refused.
	if !s.fence.admits(ctx) {
		return ErrFenced
	}
	if _, ok := s.values[k]; !ok && len(s.values) >= s.limit {
		return ErrStatesFull
	}
	if s.values == nil {
		s.values = map[StateKey]string{}
	}
	s.values[k] = value
	return nil
}

func (s *memStates) List(_ context.Context, f StateFilter) ([]StateValue, error) {
	s.mu.Lock()
	out := make([]StateValue, 0, len(s.values))
	for k, v := range s.values {
		if f.Selects(k) {
			out = append(out, StateValue{StateKey: k, Value: v})
		}
	}
	s.mu.Unlock()
	SortStates(out)
	return out, nil
}

func (s *memStates) Reset(_ context.Context, f StateFilter) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.values {
		if f.Selects(k) {
			delete(s.values, k)
			n++
		}
	}
	return n, nil
}

// AllStates selects every state.
var AllStates = StateFilter{AnySession: true, AnyKey: true}
