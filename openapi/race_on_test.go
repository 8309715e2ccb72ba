//go:build race

package openapi_test

// raceEnabled: the race detector drops pooled items at random, so
// allocation counts mean nothing under it.
const raceEnabled = true
