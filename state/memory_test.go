package state_test

import (
	"testing"

	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/state/statetest"
)

func TestMemory(t *testing.T) {
	statetest.Run(t, func(_ *testing.T, o state.Options) state.Store { return state.NewMemory(o) })
}
