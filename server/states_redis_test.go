package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/scenariomock/scenariomock/internal/redistest"
	"github.com/scenariomock/scenariomock/state/redis"
)

// TestStateReplicas: two replicas share their route states on one
// redis-server: a payment on one is seen on the other, two payments of
// one order at once, one on each replica, run one after the other (the
// state's lock is Redis's), a PUT on one answers on the other, and a
// reset on one sets them back on both.
func TestStateReplicas(t *testing.T) {
	rs := redistest.Start(t)
	yaml := strings.Replace(orderStates, "respond: { body: paying }", "respond: { body: paying, delay: 300ms }\n    lock: { wait: 30s }", 1)
	var replicas [2]string
	for i := range replicas {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: "states:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		_, hs, _ := serveYAML(t, Options{State: st}, yaml)
		replicas[i] = hs.URL
	}
	a, b := replicas[0], replicas[1]
	if r := do(t, "POST", a+"/orders/o1/pay", ""); r.status != 200 {
		t.Fatalf("pay on A = %d %s", r.status, r.body)
	}
	wantBody(t, b+"/orders/o1", 200, "o1 paid")
	wantBody(t, b+"/orders/o2", 200, "o2 pending")

	got := payAtOnce(t, "/orders/o3/pay", replicas[:]...)
	if want := []string{"200 paying", "409 already paid"}; !slices.Equal(got, want) {
		t.Fatalf("a payment on each replica at once = %q, want %q", got, want)
	}

	if r := do(t, "PUT", b+"/__admin/states/order?key=o4", `{"value":"paid"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("PUT on B = %d %s", r.status, r.body)
	}
	wantBody(t, a+"/orders/o4", 200, "o4 paid")
	if r := do(t, "POST", a+"/__admin/reset", ""); r.status != 200 {
		t.Fatalf("reset on A = %d %s", r.status, r.body)
	}
	for _, id := range []string{"o1", "o3", "o4"} {
		wantBody(t, b+"/orders/"+id, 200, id+" pending")
	}
}

// TestStateReplicasRouteOrder: a payment on each replica at once is
// answered 200 and 409 also when the "already paid" route comes first:
// the payment that waited for the state's lock in Redis matches again
// once it finds the state moved by the other replica.
func TestStateReplicasRouteOrder(t *testing.T) {
	rs := redistest.Start(t)
	yaml := payAgainFirst
	var replicas [2]string
	asked := make(chan struct{}, 1)
	for i := range replicas {
		st, err := redis.Open(context.Background(), rs.URL(), redis.Options{Prefix: "order:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		opts := Options{State: st}
		if i == 0 {
			opts.State = lockWatch{st, asked}
		}
		_, hs, _ := serveYAML(t, opts, yaml)
		replicas[i] = hs.URL
	}
	first := payFirst(t, replicas[0]+"/orders/o1/pay")
	<-asked // A takes the state's lock
	second := do(t, "POST", replicas[1]+"/orders/o1/pay", "")
	got := []string{fmt.Sprint((<-first).status), fmt.Sprint(second.status)}
	slices.Sort(got)
	if !slices.Equal(got, []string{"200", "409"}) {
		t.Fatalf("a payment on each replica = %v (B: %s), want 200 and 409", got, second.body)
	}
}
