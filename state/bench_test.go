package state_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenariomock/scenariomock/state"
)

var (
	benchCtx  = context.Background()
	benchFP   = state.Fingerprint{1, 2, 3}
	benchOpts = state.ClaimOptions{TTL: time.Hour}
)

// benchResponse is what a typical JSON create answers: headers whose
// strings the server shares between requests, and a small body.
func benchResponse(bodySize int) state.Response {
	return state.Response{
		Status: 201,
		Header: []state.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "Location", Value: "/v1/charges/ch_1"}},
		Body:   make([]byte, bodySize),
	}
}

// BenchmarkClaimComplete is the first request with a key: a claim of a
// fresh key, then its completion. Past 100,000 keys every claim evicts;
// run it past that (-benchtime 400000x) to measure a full store. The
// 1,024-byte answer is the size of a Stripe customer.
func BenchmarkClaimComplete(b *testing.B) {
	resp := benchResponse(256)
	b.Run("body=1024/serial", func(b *testing.B) {
		idem := state.NewMemory(state.Options{}).Idempotency()
		big := benchResponse(1024)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			claimComplete(b, idem, strconv.Itoa(i), big)
		}
	})
	b.Run("serial", func(b *testing.B) {
		idem := state.NewMemory(state.Options{}).Idempotency()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			claimComplete(b, idem, strconv.Itoa(i), resp)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		idem := state.NewMemory(state.Options{}).Idempotency()
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			g := strconv.FormatInt(next.Add(1), 10) + "-"
			for i := 0; pb.Next(); i++ {
				claimComplete(b, idem, g+strconv.Itoa(i), resp)
			}
		})
	})
}

func claimComplete(b *testing.B, idem state.Idempotency, key string, resp state.Response) {
	c, err := idem.Claim(benchCtx, state.Key{Group: "charges", Key: key}, benchFP, benchOpts)
	if err != nil || c.Outcome != state.New {
		b.Fatalf("claim %s: %v %v", key, c.Outcome, err)
	}
	if err := idem.Complete(benchCtx, c.Token, resp); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReplay is a retry: the lookup of a completed key, among 1,000
// or 100,000 stored keys.
func BenchmarkReplay(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		idem := state.NewMemory(state.Options{}).Idempotency()
		keys := make([]state.Key, n)
		for i := range keys {
			keys[i] = state.Key{Group: "charges", Key: fmt.Sprintf("key-%08d", i)}
			c, err := idem.Claim(benchCtx, keys[i], benchFP, benchOpts)
			if err != nil {
				b.Fatal(err)
			}
			if err := idem.Complete(benchCtx, c.Token, benchResponse(256)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("keys=%d/serial", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				replay(b, idem, keys[i%n])
			}
		})
		b.Run(fmt.Sprintf("keys=%d/parallel", n), func(b *testing.B) {
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(7919))
				for pb.Next() {
					replay(b, idem, keys[i%n])
					i++
				}
			})
		})
	}
}

func replay(b *testing.B, idem state.Idempotency, k state.Key) {
	c, err := idem.Claim(benchCtx, k, benchFP, benchOpts)
	if err != nil || c.Outcome != state.Replay {
		b.Fatalf("replay %s: %v %v", k.Key, c.Outcome, err)
	}
}

// BenchmarkHit is a sequence's step on every request of a route.
func BenchmarkHit(b *testing.B) {
	seq := state.NewMemory(state.Options{}).Sequences()
	route := "charge-once@3f9a1c2b7d4e5f60"
	b.Run("shared/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := seq.Hit(benchCtx, route); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("per-key/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := seq.HitKey(benchCtx, route, "cus_123"); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkMemoryPerKey fills a store to its default bound of 100,000
// completed keys, each with a body of its own, and reports the heap the
// store holds per key beyond the body's bytes (keys: 36-byte UUID-like
// strings in a group and a scope, as the server would pass them).
func BenchmarkMemoryPerKey(b *testing.B) {
	const n, bodySize = 100_000, 256
	resp := benchResponse(bodySize)
	keys := make([]state.Key, n)
	for i := range keys {
		keys[i] = state.Key{Group: "charges", Scope: "Bearer sk_test_123", Key: fmt.Sprintf("6f1c2a4e-0000-4000-8000-%012d", i)}
	}
	var perKey float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		idem := state.NewMemory(state.Options{MaxKeys: n}).Idempotency()
		for _, k := range keys {
			c, err := idem.Claim(benchCtx, k, benchFP, benchOpts)
			if err != nil {
				b.Fatal(err)
			}
			if err := idem.Complete(benchCtx, c.Token, resp); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if _, total, _ := idem.List(benchCtx, state.ListOptions{Limit: 1}); total != n {
			b.Fatalf("%d keys stored, want %d", total, n)
		}
		runtime.KeepAlive(idem)
		perKey = float64(after.HeapAlloc-before.HeapAlloc)/n - bodySize
	}
	runtime.KeepAlive(keys)
	b.ReportMetric(perKey, "bytes/key-beyond-body")
}

// BenchmarkGCMark measures a full garbage collection with 1,000 and with
// 100,000 completed keys stored (256-byte bodies, two headers): the cost
// the stored answers add to every GC cycle's mark phase. Flat in keys is
// the goal: stored answers should give the collector nothing to trace.
func BenchmarkGCMark(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			idem := state.NewMemory(state.Options{MaxKeys: n}).Idempotency()
			resp := benchResponse(256)
			for i := range n {
				k := state.Key{Group: "charges", Scope: "Bearer sk_test_123", Key: fmt.Sprintf("6f1c2a4e-0000-4000-8000-%012d", i)}
				c, err := idem.Claim(benchCtx, k, benchFP, benchOpts)
				if err != nil {
					b.Fatal(err)
				}
				if err := idem.Complete(benchCtx, c.Token, resp); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			b.ResetTimer()
			for b.Loop() {
				runtime.GC()
			}
			runtime.KeepAlive(idem)
		})
	}
}

// BenchmarkJournalGCMark measures a full garbage collection with a full
// journal of the default size, each entry as the server appends it (a
// request's own header map of five headers, its path and query, a
// 64-byte body, a route name): the cost the journal adds to every GC
// cycle's mark phase, which a busy server pays every few thousand
// requests. Entries that give the collector nothing to trace are the goal.
func BenchmarkJournalGCMark(b *testing.B) {
	j := state.NewMemory(state.Options{JournalSize: state.DefaultJournalSize}).Journal()
	for i := range state.DefaultJournalSize {
		e := state.Entry{
			Time: time.Now(), Method: "POST", Path: "/v1/charges/" + strconv.Itoa(i), Query: "expand=" + strconv.Itoa(i),
			Headers: map[string][]string{
				"User-Agent": {"bench/1.0"}, "Accept": {"application/json"}, "Content-Type": {"application/json"},
				"Idempotency-Key": {"key-" + strconv.Itoa(i)}, "Accept-Encoding": {"gzip"},
			},
			Body: make([]byte, 64), BodySize: 64, Route: "create charge", Matched: true, Status: 201,
		}
		if err := j.Append(benchCtx, &e); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	// Wall time of a collection is noise on a shared machine; what the
	// journal makes the collector trace is not: the scannable heap (the
	// bytes the mark phase must read) and the objects it keeps live.
	m := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/objects:objects"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(m)
	gc0 := m[2].Value.Float64()
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
	metrics.Read(m)
	b.ReportMetric(float64(m[0].Value.Uint64()), "scan-B")
	b.ReportMetric(float64(m[1].Value.Uint64()), "objects")
	b.ReportMetric((m[2].Value.Float64()-gc0)*1e9/float64(b.N), "gc-cpu-ns/op")
	runtime.KeepAlive(j)
}

// BenchmarkJournalAppend measures one Append to a full memory journal of
// the default size, as the server makes it (five request headers, a
// 64-byte body), without and with the answer the entry keeps (two
// headers, a 64-byte body): what keeping the answer costs per request.
//
//	go test -run XXX -bench JournalAppend ./state
func BenchmarkJournalAppend(b *testing.B) {
	for _, withResponse := range []bool{false, true} {
		b.Run(fmt.Sprintf("response=%v", withResponse), func(b *testing.B) {
			b.ReportAllocs()
			j := state.NewMemory(state.Options{JournalSize: state.DefaultJournalSize}).Journal()
			e := state.Entry{
				Time: time.Now(), Method: "POST", Path: "/v1/charges", Query: "expand=customer",
				Headers: map[string][]string{
					"User-Agent": {"bench/1.0"}, "Accept": {"application/json"}, "Content-Type": {"application/json"},
					"Idempotency-Key": {"key-1"}, "Accept-Encoding": {"gzip"},
				},
				Body: make([]byte, 64), BodySize: 64, Route: "create charge", Matched: true, Status: 201,
			}
			if withResponse {
				e.Response = &state.EntryResponse{
					Status: 201, Headers: map[string][]string{"Content-Type": {"application/json"}, "Content-Length": {"64"}},
					Body: make([]byte, 64), BodySize: 64,
				}
			}
			for range state.DefaultJournalSize { // full: each Append overwrites the oldest slot
				if err := j.Append(benchCtx, &e); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if err := j.Append(benchCtx, &e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCollectionsGCMark measures a full garbage collection with
// 1,000 and with 100,000 stored items (926-byte bodies, the size of a
// Stripe customer, under ids like Stripe's): the cost the stored
// resources add to every GC cycle's mark phase, which a server that
// creates thousands of objects a second pays every few thousand requests.
func BenchmarkCollectionsGCMark(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			cols := state.NewMemory(state.Options{MaxItems: n}).Collections()
			body := make([]byte, 926)
			for i := range n {
				if _, err := cols.Save(benchCtx, "openapi /v1/customers", fmt.Sprintf("cus_%014d", i), body); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			b.ResetTimer()
			for b.Loop() {
				runtime.GC()
			}
			runtime.KeepAlive(cols)
		})
	}
}

// BenchmarkCollectionsSave is a create's save: a new item of 926 bytes
// in a collection that grows (bounded past what the benchmark stores).
func BenchmarkCollectionsSave(b *testing.B) {
	cols := state.NewMemory(state.Options{MaxItems: 1 << 30, MaxCollectionBytes: 1 << 40}).Collections()
	body := make([]byte, 926)
	id := []byte("cus_00000000000000")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		for k, v := len(id)-1, i; v > 0; k, v = k-1, v/10 {
			id[k] = byte('0' + v%10)
		}
		if _, err := cols.Save(benchCtx, "openapi /v1/customers", string(id), body); err != nil {
			b.Fatal(err)
		}
	}
}
