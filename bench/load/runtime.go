package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// runtimeResult is the runtime-documents-under-load workload's figures.
type runtimeResult struct {
	cycles int
	result // the load running during the cycles
	// post and del are how long POST and DELETE /__admin/scenarios took;
	// served is from a POST's answer to the first answer of one of its
	// routes (asked at once, on another connection).
	post, del, served []time.Duration
	// wrongRoutes counts answers of the documents' routes that were not
	// theirs: not served right after the POST, or still served after the
	// DELETE.
	wrongRoutes int
}

// runtimeDoc is a runtime document of 10 routes, GET /rt/<cycle>/<j>.
func runtimeDoc(cycle int) []byte {
	var b strings.Builder
	b.WriteString("routes:\n")
	for j := range 10 {
		fmt.Fprintf(&b, "  - {name: rt %d %d, method: GET, path: /rt/%d/%d, respond: {status: 200, body: \"rt-%d-%d\"}}\n", cycle, j, cycle, j, cycle, j)
	}
	return []byte(b.String())
}

// runtimeUnderLoad serves the demo and, while conns connections request
// GET /payments/pay_demo_0001 without pause, adds and removes a runtime
// document of 10 routes cycles times. Every load answer must be the
// demo's; each document's route must answer as soon as its POST has, and
// 404 as soon as its DELETE has.
func (h *harness) runtimeUnderLoad(cycles int) (runtimeResult, error) {
	res := runtimeResult{cycles: cycles}
	sm, err := start("scenariomock", h.bin, append([]string{"serve", "--addr", "{addr}"}, h.smArgs...)...)
	if err != nil {
		return res, err
	}
	defer sm.stop()
	req := get("/payments/pay_demo_0001")
	want, err := probe(sm.addr, req)
	if err != nil {
		return res, err
	}
	finish := h.background(sm.addr, req, func(rp reply, _ time.Time) bool {
		return rp.status == 200 && bytes.Equal(rp.body, want.Body)
	})
	admin, err := dial(sm.addr)
	if err != nil {
		return res, err
	}
	defer admin.close()
	probeConn, err := dial(sm.addr)
	if err != nil {
		return res, err
	}
	defer probeConn.close()
	for i := range cycles {
		doc := runtimeDoc(i)
		post := append([]byte("POST /__admin/scenarios HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/yaml\r\nContent-Length: "+strconv.Itoa(len(doc))+"\r\n\r\n"), doc...)
		t0 := time.Now()
		rp, err := admin.do(post, 30*time.Second)
		if err != nil || rp.status != 201 {
			return res, fmt.Errorf("POST /__admin/scenarios: %d %s %v", rp.status, rp.body, err)
		}
		posted := time.Now()
		res.post = append(res.post, posted.Sub(t0))
		id := string(bytes.Split(bytes.SplitN(rp.body, []byte(`"id": "`), 2)[1], []byte(`"`))[0])
		rq, err := probeConn.do(get(fmt.Sprintf("/rt/%d/%d", i, i%10)), 10*time.Second)
		res.served = append(res.served, time.Since(posted))
		if err != nil || rq.status != 200 || string(rq.body) != fmt.Sprintf("rt-%d-%d", i, i%10) {
			res.wrongRoutes++
		}
		t0 = time.Now()
		rp, err = admin.do([]byte("DELETE /__admin/scenarios/"+id+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 30*time.Second)
		if err != nil || rp.status != 200 {
			return res, fmt.Errorf("DELETE /__admin/scenarios/%s: %d %s %v", id, rp.status, rp.body, err)
		}
		res.del = append(res.del, time.Since(t0))
		if rq, err := probeConn.do(get(fmt.Sprintf("/rt/%d/0", i)), 10*time.Second); err != nil || rq.status != 404 {
			res.wrongRoutes++
		}
	}
	res.result = finish()
	return res, nil
}
