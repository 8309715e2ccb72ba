package state_test

import (
	"testing"

	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/statetest"
)

func TestMemory(t *testing.T) {
	statetest.Run(t, func(_ *testing.T, o state.Options) state.Store { return state.NewMemory(o) })
}

// TestMemorySharded runs the suite on a store big enough to be sharded
// (the bound tests set their own small bounds and so run unsharded).
func TestMemorySharded(t *testing.T) {
	statetest.Run(t, func(_ *testing.T, o state.Options) state.Store {
		if o.MaxKeys == 0 {
			o.MaxKeys = 1 << 20
		}
		return state.NewMemory(o)
	})
}

// TestMemoryHashCollisions runs the suite with every key's hash the same.
func TestMemoryHashCollisions(t *testing.T) {
	statetest.Run(t, func(_ *testing.T, o state.Options) state.Store { return state.NewCollidingMemory(o) })
}
