package server

import (
	"math/rand/v2"
	"sync"
)

// SeededRand returns a source of uniform numbers in [0, 1) that starts
// from seed, for Options.Rand (serve --seed). It is safe for concurrent
// use: one generator behind a mutex, so that every random choice of the
// server (a fault's chance, a delay range, randomInt, randomHex, uuid,
// random-data's bytes) comes from one sequence. Two servers with the same
// seed make the same choices for the same requests in the same order;
// concurrent requests take their numbers in the order they reach the
// lock, which the seed does not fix.
func SeededRand(seed uint64) func() float64 {
	var mu sync.Mutex // guards r
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}
