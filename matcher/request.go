package matcher

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/scenariomock/scenariomock/scenarios"
)

// Request is one request being matched, with what matching derives from it
// (the parsed query and JSON body) computed at most once. It is not safe
// for concurrent use; each request has its own.
type Request struct {
	HTTP *http.Request
	Body []byte
	// Session is the test session the request belongs to (the server
	// reads it from a header or a path prefix): routes of a session
	// answer only its requests; routes without one answer all.
	Session string
	// States reads the route states that routes' is: conditions test
	// (state:); nil reads none, and such a condition fails. The server
	// sets it when the table has such routes (Table.States).
	States StateReader

	query       url.Values
	queryParsed bool
	json        any
	jsonErr     error
	jsonParsed  bool
	// The form, by key as sent and nested; each parsed on first use.
	formValues   url.Values
	formParsed   bool
	nested       map[string]any
	nestedParsed bool
	// The last header looked up: routes tried in turn usually test the
	// same header (the demo's four POST /payments routes all read
	// Idempotency-Key, and so does its sequence).
	lastHeader string
	lastValues []string

	// Results of the conditions worth remembering (body tests, header and
	// query regex and contains), by the id Compile gave each distinct one,
	// so that Match and then Explain evaluate each at most once. Each
	// condition has four bits: 0 for not yet tested, else its outcome + 1
	// (a body has four outcomes, bodyOK to bodyFormFailed); small serves
	// tables with up to 16 such conditions without allocating. cacheTable
	// is the table the ids belong to.
	cacheTable *Table
	small      uint64
	large      []uint64
	evals      int // raw body tests run, for tests
}

// StateReader reads the route states for the matcher, which does no
// I/O of its own: the server implements it over its state store, reads
// each state at most once per request, and keeps what went wrong. It
// need not be safe for concurrent use (one request's).
type StateReader interface {
	// ReadState returns the value of route r's state for the request
	// being matched, whose path r's template bound to vars, and the key
	// r's state: per: rendered ("" for none). ok is false when the state
	// could not be read; the route's condition then fails.
	ReadState(r *scenarios.Route, vars map[string]string) (key, value string, ok bool)
}

// cached returns what is known of condition id: the outcome it was stored
// with, and whether it was stored.
func (q *Request) cached(t *Table, id int32) (int, bool) {
	if q.cacheTable != t {
		return 0, false
	}
	bits := q.small
	if q.large != nil {
		bits = q.large[id/cachedPerWord]
	}
	v := bits >> (cachedBits * (id % cachedPerWord)) & (1<<cachedBits - 1)
	return int(v) - 1, v != 0
}

// cachedBits is the room of one remembered outcome: enough for the four
// body outcomes and "not yet tested". (With two bits, a form failure,
// outcome 3, spilled into the next condition's room and made it pass.)
const (
	cachedBits    = 4
	cachedPerWord = 64 / cachedBits
)

// remember stores the outcome (0 to 3) of condition id.
func (q *Request) remember(t *Table, id int32, outcome int) {
	if q.cacheTable != t {
		q.cacheTable, q.small, q.large = t, 0, nil
		if t.cached > cachedPerWord {
			q.large = make([]uint64, (t.cached+cachedPerWord-1)/cachedPerWord)
		}
	}
	v := uint64(outcome+1) << (cachedBits * (id % cachedPerWord))
	if q.large != nil {
		q.large[id/cachedPerWord] |= v
	} else {
		q.small |= v
	}
}

// NewRequest returns a Request for r whose body has already been read.
func NewRequest(r *http.Request, body []byte) *Request {
	return &Request{HTTP: r, Body: body}
}

// Query returns the parsed query string.
func (q *Request) Query() url.Values {
	if !q.queryParsed {
		q.query, q.queryParsed = q.HTTP.URL.Query(), true
	}
	return q.query
}

// JSON returns the body parsed as JSON (numbers as json.Number), or the
// reason it is not JSON.
func (q *Request) JSON() (any, error) {
	if !q.jsonParsed {
		q.jsonParsed = true
		dec := json.NewDecoder(bytes.NewReader(q.Body))
		dec.UseNumber()
		var doc any // a local: decoding into &q.json would move every Request to the heap
		err := dec.Decode(&doc)
		if err == nil && dec.More() {
			doc, err = nil, errTrailing
		}
		q.json, q.jsonErr = doc, err
	}
	return q.json, q.jsonErr
}

type jsonError string

func (e jsonError) Error() string { return string(e) }

const errTrailing = jsonError("extra data after the JSON value")

// Header returns the values of a header (canonical name). Go moves Host
// out of the header map; it is found here all the same.
func (q *Request) Header(name string) []string {
	if name == "Host" {
		if q.HTTP.Host == "" {
			return nil
		}
		return []string{q.HTTP.Host}
	}
	if name != q.lastHeader || name == "" {
		q.lastHeader, q.lastValues = name, q.HTTP.Header[name]
	}
	return q.lastValues
}

// Attribute returns the value of a request attribute and whether it is
// there. A body field that is an object or array is returned as its JSON.
func (q *Request) Attribute(a *scenarios.Attribute, vars map[string]string) (string, bool) {
	switch a.Kind {
	case scenarios.HeaderAttr:
		v := q.Header(a.Name)
		if len(v) == 0 {
			return "", false
		}
		return v[0], true
	case scenarios.QueryAttr:
		v, ok := q.Query()[a.Name]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	case scenarios.PathAttr:
		v, ok := vars[a.Name]
		return v, ok
	case scenarios.FormAttr:
		v := q.FormValues()[a.Name]
		if len(v) == 0 {
			return "", false
		}
		return v[0], true
	case scenarios.BodyAttr:
		doc, err := q.JSON()
		if err != nil {
			return "", false
		}
		v, ok := lookup(doc, a.Path)
		if !ok {
			return "", false
		}
		return jsonText(v), true
	}
	return "", false
}

func lookup(doc any, path []string) (any, bool) {
	for _, seg := range path {
		switch v := doc.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return nil, false
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			doc = v[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// jsonText renders a JSON value as a key: strings as themselves, anything
// else as its JSON encoding.
func jsonText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
