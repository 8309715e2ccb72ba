package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/scenariomock/scenariomock/state"
	"github.com/scenariomock/scenariomock/upstream"
)

// Problem is an RFC 9457 problem details object. Extensions carry the
// machine-readable parts (closest routes, validation errors).
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Closest lists the routes that came nearest to matching.
	Closest any `json:"closest,omitempty"`
	// Errors lists scenario problems as file:line:col: message.
	Errors []string `json:"errors,omitempty"`
}

// newProblem returns a problem of the generic type, titled by the status's
// phrase as RFC 9457 asks for about:blank.
func newProblem(status int, detail string) *Problem {
	return &Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
}

// The problem types of the built-in refusals that mean more than their
// status: RFC 9457 §4.2.1 keeps about:blank for problems that say no
// more than the status (titled by its phrase), so each of these has a
// type URI of its own, a stable title, and a row in the README's
// "Problem types" table, where the URI's fragment points.
const problemTypes = "https://github.com/scenariomock/scenariomock#"

// problemType is one built-in problem type: its URI, the status it is
// sent with, and its title, the same on every problem of the type.
type problemType struct {
	uri    string
	status int
	title  string
}

var (
	probKeyMissing      = problemType{problemTypes + "idempotency-key-missing", http.StatusBadRequest, "Idempotency-Key is missing"}
	probKeyInvalid      = problemType{problemTypes + "idempotency-key-invalid", http.StatusBadRequest, "Idempotency-Key is invalid"}
	probKeyReused       = problemType{problemTypes + "idempotency-key-reused", http.StatusUnprocessableEntity, "Idempotency-Key is already used"}
	probKeyInFlight     = problemType{problemTypes + "idempotency-key-in-flight", http.StatusConflict, "A request is outstanding for this Idempotency-Key"}
	probObjectLocked    = problemType{problemTypes + "object-locked", http.StatusTooManyRequests, "Object locked"}
	probStateLocked     = problemType{problemTypes + "route-state-locked", http.StatusTooManyRequests, "Route state locked"}
	builtinProblemTypes = []problemType{probKeyMissing, probKeyInvalid, probKeyReused, probKeyInFlight, probObjectLocked, probStateLocked}
)

// problem returns a problem of type t.
func (t problemType) problem(detail string) *Problem {
	return &Problem{Type: t.uri, Title: t.title, Status: t.status, Detail: detail}
}

func writeProblem(w http.ResponseWriter, p *Problem) {
	b := problemHead(w.Header(), p)
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}

// problemHead encodes p and sets in h the head it goes out with; it
// returns the body. The journal calls it too, on a copy of the head, to
// keep the problem as it is sent.
func problemHead(h http.Header, p *Problem) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a detail quoting <.Request.x> stays readable
	err := enc.Encode(p)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		b = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	if p.Status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		// Every 503 is a store or a reload that may answer soon: say when
		// to retry, so that clients with backoff come back.
		h.Set("Retry-After", "1")
	}
	return b
}

// errBodyTooLarge and errBodyUnreadable are the request errors the handler
// maps to problems; statusOf is the one place that decides their status.
var (
	errBodyTooLarge   = errors.New("request body too large")
	errBodyUnreadable = errors.New("request body unreadable")
	errBodyTimeout    = errors.New("request body too slow")
	errTemplate       = errors.New("response template failed")
	// errRenderTooLarge is a render cut off at --max-template-output;
	// errRenderBudget one cut off at scenarios.MaxRangeSteps, and
	// errRenderCancelled one whose request ended. All are 500s.
	errRenderTooLarge  = errors.New("response template output too large")
	errRenderBudget    = errors.New("render step budget spent")
	errRenderCancelled = errors.New("render cancelled")
)

func statusOf(err error) int {
	switch {
	case errors.Is(err, errBodyTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBodyUnreadable):
		return http.StatusBadRequest
	case errors.Is(err, errBodyTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, errPage):
		return http.StatusBadRequest
	case errors.Is(err, state.ErrFull), errors.Is(err, state.ErrStatesFull):
		return http.StatusInsufficientStorage
	case errors.Is(err, errStore):
		return http.StatusServiceUnavailable
	}
	var ue *upstream.Error
	if errors.As(err, &ue) {
		return ue.Status // 502, 504 or 508, naming the upstream and the cause
	}
	return http.StatusInternalServerError
}
