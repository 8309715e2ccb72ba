package openapi_test

// Tests that serve testdata/bookings, a bookings API in the shape of
// Bump.sh's Train Travel API (OpenAPI 3.1): its list is allOf a generic
// wrapper and the list's own items, and its schemas use 3.1's type
// arrays, const and examples arrays.

import (
	"path/filepath"
	"strings"
	"testing"
)

// bookingsSpec is the spec's path, served read-only by each test.
var bookingsSpec = filepath.Join("testdata", "bookings", "openapi.yaml")

// TestBookingsAllOfList: a list answered as allOf a wrapper, whose data is
// an array of any object, and {data: {items: Booking}} keeps its items in
// data. Its shape was read from the schema's own properties only, which
// an allOf has none of, so the list answered the spec's example whatever
// was created.
func TestBookingsAllOfList(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, bookingsSpec, nil)
	c := conformanceOf(t, bookingsSpec)
	var made []string
	for _, name := range []string{"Ann", "Bo"} {
		got := call(t, "POST", hs.URL+"/bookings", "application/json", `{"trip_id":"b2e783e1-c824-4d63-b37a-d8d698862f1d","passenger_name":"`+name+`"}`)
		id, _ := got.json["id"].(string)
		if got.status != 201 || id == "" || got.json["passenger_name"] != name {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
		made = append([]string{id}, made...)
	}
	list := call(t, "GET", hs.URL+"/bookings", "", "")
	c.check(t, "GET", hs.URL+"/bookings", list)
	if got := listed(list, "id"); list.status != 200 || strings.Join(got, ",") != strings.Join(made, ",") {
		t.Fatalf("list: %d %s; want the two bookings made, newest first (%v)", list.status, list.body, made)
	}
	if got := listed(call(t, "GET", hs.URL+"/bookings?limit=1", "", ""), "id"); len(got) != 1 || got[0] != made[0] {
		t.Fatalf("list ?limit=1: %v; want the newest booking alone", got)
	}
}

// TestBookings31Requests: requests are checked as 3.1 reads the schemas:
// a type array with "null" takes null and a value of its other type, and
// nothing else; const takes its value alone; a $ref with a sibling is the
// schema it names.
func TestBookings31Requests(t *testing.T) {
	t.Parallel()
	_, hs := serveSpec(t, bookingsSpec, nil)
	const trip = `"trip_id":"b2e783e1-c824-4d63-b37a-d8d698862f1d"`
	for _, tc := range []struct {
		name, body string
		status     int
		detail     string // in the answer's body
	}{
		{"a null seat", `{` + trip + `,"passenger_name":"Ann","seat":null}`, 201, `"seat":null`},
		{"a seat", `{` + trip + `,"passenger_name":"Ann","seat":"12A"}`, 201, `"seat":"12A"`},
		{"a seat of the wrong type", `{` + trip + `,"passenger_name":"Ann","seat":12}`, 400, "#/seat"},
		{"a seat out of pattern", `{` + trip + `,"passenger_name":"Ann","seat":"row 12"}`, 400, "#/seat"},
		{"the const", `{` + trip + `,"passenger_name":"Ann","kind":"booking"}`, 201, `"kind":"booking"`},
		{"another const", `{` + trip + `,"passenger_name":"Ann","kind":"ticket"}`, 400, "#/kind"},
		{"no passenger", `{` + trip + `}`, 400, "passenger_name"},
	} {
		got := call(t, "POST", hs.URL+"/bookings", "application/json", tc.body)
		if got.status != tc.status || !strings.Contains(got.body, tc.detail) {
			t.Errorf("%s: %s: %d %s; want %d with %q", tc.name, tc.body, got.status, got.body, tc.status, tc.detail)
		}
	}
}
