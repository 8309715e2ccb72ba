package server

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/scenariomock/scenariomock/state"
)

// pageStore is a memory store whose journal records the most entries one
// read returned: what a reader that stalls would pin.
type pageStore struct {
	state.Store
	j *widestJournal
}

func (p pageStore) Journal() state.Journal { return p.j }

type widestJournal struct {
	state.Journal
	mu     sync.Mutex // guards widest
	widest int
}

func (j *widestJournal) saw(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.widest = max(j.widest, n)
}

func (j *widestJournal) Entries(ctx context.Context, after int64) ([]state.Entry, error) {
	es, err := j.Journal.Entries(ctx, after)
	j.saw(len(es))
	return es, err
}

func (j *widestJournal) Page(ctx context.Context, after int64, limit int) ([]state.Entry, error) {
	es, err := state.EntriesPage(ctx, j.Journal, after, limit)
	j.saw(len(es))
	return es, err
}

func (j *widestJournal) reset() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := j.widest
	j.widest = 0
	return n
}

// TestJournalReadsOnePage: the request stream and the listings read the
// journal a page at a time (issue 19 item 8): a stream from ?after=0 that
// stalls pins one page, not a journal's worth of entries, which the
// journal may have dropped since. Each still sees every entry, in order.
func TestJournalReadsOnePage(t *testing.T) {
	t.Parallel()
	mem := state.NewMemory(state.Options{JournalSize: 5000})
	t.Cleanup(func() { mem.Close() })
	j := &widestJournal{Journal: mem.Journal()}
	_, hs, _ := serveYAML(t, Options{State: pageStore{Store: mem, j: j}}, journalScenario)
	const n = 3*journalPage + 17
	for range n {
		do(t, "GET", hs.URL+"/teapot", "")
	}
	j.reset()

	next, body := openStream(t, hs.URL, "after=0")
	for i := 1; i <= n; i++ {
		ev := next()
		if ev.id != strconv.Itoa(i) {
			t.Fatalf("event %d has id %q", i, ev.id)
		}
	}
	body.Close()
	if w := j.reset(); w > journalPage {
		t.Errorf("the stream read %d entries at once; want at most a page of %d", w, journalPage)
	}

	r := do(t, "GET", hs.URL+"/__admin/requests?limit=300", "")
	var list struct {
		Requests []state.Entry `json:"requests"`
		Total    int           `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Total != n || len(list.Requests) != 300 || list.Requests[0].ID != n-299 || list.Requests[299].ID != n {
		t.Errorf("listing: total %d, %d entries from %d; want %d, the newest 300", list.Total, len(list.Requests), list.Requests[0].ID, n)
	}
	if c := do(t, "GET", hs.URL+"/__admin/requests/count?path=/teapot", "").json(t)["count"]; c != float64(n) {
		t.Errorf("count = %v, want %d", c, n)
	}
	if w := j.reset(); w > journalPage {
		t.Errorf("the listings read %d entries at once; want at most a page of %d", w, journalPage)
	}
}
