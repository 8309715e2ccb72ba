package state

import (
	"bytes"
	"fmt"
	"testing"
)

// An arena under eviction oldest first lets go of each chunk as its last
// span is dropped: it holds about what it keeps, without compacting, and
// every span it keeps, and every view taken before, reads its own bytes.
func TestArenaLetsGoOfEmptiedChunks(t *testing.T) {
	var a arena
	type kept struct {
		sp   span
		want []byte
	}
	var fifo []kept
	var views [][]byte
	const keep, each = 200, 700
	for i := range 20_000 {
		b := bytes.Repeat([]byte{byte(i)}, each)
		b = fmt.Appendf(b[:0:0], "%06d%s", i, b[6:])
		fifo = append(fifo, kept{a.add(b), b})
		if i%5000 == 0 {
			views = append(views, a.bytes(fifo[len(fifo)-1].sp))
		}
		if len(fifo) > keep {
			a.drop(fifo[0].sp)
			fifo = fifo[1:]
		}
	}
	if a.live != keep*each {
		t.Errorf("live %d bytes; want %d", a.live, keep*each)
	}
	// What it keeps, plus the chunk being filled and the chunk the oldest
	// kept span shares with spans already dropped.
	if limit := int64(keep*each + 2*arenaMax); a.used > limit {
		t.Errorf("arena holds %d bytes in %d chunks for %d kept; want at most %d", a.used, len(a.chunks), a.live, limit)
	}
	if len(a.chunks) > keep*each/arenaMax+3 {
		t.Errorf("%d chunks (numbered from %d) for %d bytes kept", len(a.chunks), a.first, a.live)
	}
	for _, k := range fifo {
		if got := a.bytes(k.sp); !bytes.Equal(got, k.want) {
			t.Fatalf("span %+v reads %.12q…; want %.12q…", k.sp, got, k.want)
		}
	}
	for i, v := range views {
		if want := fmt.Sprintf("%06d", i*5000); string(v[:6]) != want {
			t.Errorf("a view taken before its chunk was let go reads %q; want %q", v[:6], want)
		}
	}
}

// A chunk emptied out of order, in the middle, is let go too; the chunks
// around it still read.
func TestArenaLetsGoOfAMiddleChunk(t *testing.T) {
	var a arena
	var spans []span
	for i := range 300 {
		spans = append(spans, a.add(bytes.Repeat([]byte{byte(i)}, 1000)))
	}
	mid := spans[150].chunk
	for _, sp := range spans {
		if sp.chunk == mid {
			a.drop(sp)
		}
	}
	if a.chunks[mid-a.first] != nil {
		t.Fatalf("chunk %d, all dropped, is still held", mid)
	}
	for i, sp := range spans {
		if sp.chunk != mid && a.bytes(sp)[999] != byte(i) {
			t.Fatalf("span %d reads wrong after chunk %d was let go", i, mid)
		}
	}
	if a.used != a.live {
		t.Errorf("used %d, live %d: nothing but the let-go chunk was dropped", a.used, a.live)
	}
}

// An answer stored with its header packed ahead (Response.Packed) is the
// same bytes as one the store packs, and reads back the same.
func TestAnswerPackedAhead(t *testing.T) {
	for _, h := range [][]Header{
		nil,
		{{"Content-Length", "2"}},
		{{"Content-Type", "application/json"}, {"Location", "/payments/1"}, {"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}, {"X-Empty", ""}},
	} {
		var a arena
		r := Response{Status: 201, Header: h, Body: []byte("{}")}
		packed := r
		packed.Packed = PackHeader(h)
		got, want := a.bytes(a.addAnswer(packed)), a.bytes(a.addAnswer(r))
		if !bytes.Equal(got, want) {
			t.Errorf("%q: packed ahead %q, packed by the store %q", h, got, want)
		}
		back := decodeAnswer(got, nil)
		if back.Status != 201 || string(back.Body) != "{}" || fmt.Sprint(back.Header) != fmt.Sprint(h) {
			t.Errorf("%q: read back %d %q %q", h, back.Status, back.Header, back.Body)
		}
	}
}
