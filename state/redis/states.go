package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/scenariomock/scenariomock/state"
)

// redisStates keeps the route states in one hash, s, whose fields are
// session, name and key joined by NUL bytes (none of them holds one:
// session and state names are checked, and a key that renders one is
// refused), so that replicas on one Redis share every state. A Get is
// one HGET; a Set is one script that checks the fence and the bound.
type redisStates struct{ r *Store }

// setStateScript: KEYS s, e. ARGV field, value, the bound, the epoch (""
// unfenced). Returns 0, -1 when the field is new and the bound is
// reached, or -2 when fenced off.
var setStateScript = goredis.NewScript(luaFenced + `
if fenced(KEYS[2], ARGV[4]) then return -2 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 0
`)

// errStateKey refuses a key with a NUL byte, which would read back as
// another session's or name's.
var errStateKey = errors.New("state: a route state's key must not hold a NUL byte")

func stateField(k state.StateKey) string { return k.Session + "\x00" + k.Name + "\x00" + k.Key }

func parseStateField(f string) (state.StateKey, bool) {
	session, rest, ok1 := strings.Cut(f, "\x00")
	name, key, ok2 := strings.Cut(rest, "\x00")
	return state.StateKey{Session: session, Name: name, Key: key}, ok1 && ok2
}

func (s *redisStates) Get(ctx context.Context, k state.StateKey) (string, error) {
	v, err := s.r.rdb.HGet(ctx, s.r.key("s"), stateField(k)).Result()
	if errors.Is(err, goredis.Nil) {
		return state.StateStarted, nil
	}
	if err != nil {
		return "", fmt.Errorf("state: redis route state: %w", err)
	}
	return v, nil
}

func (s *redisStates) Set(ctx context.Context, k state.StateKey, value string) error {
	if len(k.Key) > state.MaxStatePart || len(value) > state.MaxStatePart {
		return state.ErrStatesFull
	}
	if strings.ContainsRune(k.Session+k.Name+k.Key, 0) {
		return errStateKey
	}
	n, err := setStateScript.Run(ctx, s.r.rdb, []string{s.r.key("s"), s.r.key("e")}, stateField(k), value, s.r.o.MaxStates, fenceArg(ctx)).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("state: redis set route state: %w", err)
	case n == fencedResult:
		return s.r.refused(ctx)
	case n < 0:
		return state.ErrStatesFull
	}
	return nil
}

// all returns every state kept, those f selects. The states are
// bounded (MaxStates), and only the admin API lists or resets some.
func (s *redisStates) all(ctx context.Context, f state.StateFilter) ([]state.StateValue, error) {
	m, err := s.r.rdb.HGetAll(ctx, s.r.key("s")).Result()
	if err != nil {
		return nil, fmt.Errorf("state: redis route states: %w", err)
	}
	out := make([]state.StateValue, 0, len(m))
	for field, v := range m {
		if k, ok := parseStateField(field); ok && f.Selects(k) {
			out = append(out, state.StateValue{StateKey: k, Value: v})
		}
	}
	return out, nil
}

func (s *redisStates) List(ctx context.Context, f state.StateFilter) ([]state.StateValue, error) {
	out, err := s.all(ctx, f)
	state.SortStates(out)
	return out, err
}

func (s *redisStates) Reset(ctx context.Context, f state.StateFilter) (int, error) {
	if f == state.AllStates {
		n, err := s.r.rdb.HLen(ctx, s.r.key("s")).Result()
		if err == nil {
			err = s.r.rdb.Del(ctx, s.r.key("s")).Err()
		}
		if err != nil {
			return 0, fmt.Errorf("state: redis reset route states: %w", err)
		}
		return int(n), nil
	}
	vs, err := s.all(ctx, f)
	if err != nil || len(vs) == 0 {
		return 0, err
	}
	fields := make([]string, len(vs))
	for i, v := range vs {
		fields[i] = stateField(v.StateKey)
	}
	n, err := s.r.rdb.HDel(ctx, s.r.key("s"), fields...).Result()
	if err != nil {
		return 0, fmt.Errorf("state: redis reset route states: %w", err)
	}
	return int(n), nil
}
