//go:build race

package server

// raceEnabled: the race detector drops pooled items at random, so
// allocation counts mean nothing under it (.ci/run runs the allocation
// tests without it).
const raceEnabled = true
