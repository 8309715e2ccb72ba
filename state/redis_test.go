package state_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/statetest"
)

// TestRedis runs the conformance suite against a real redis-server, each
// store under its own prefix so that the parallel cases share nothing.
func TestRedis(t *testing.T) {
	srv := redistest.Start(t)
	var n atomic.Int64
	statetest.Run(t, func(t *testing.T, o state.Options) state.Store {
		s, err := state.OpenRedis(context.Background(), srv.URL(), state.RedisOptions{
			Options: o,
			Prefix:  fmt.Sprintf("test%d:", n.Add(1)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
