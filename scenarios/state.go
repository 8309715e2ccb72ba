package scenarios

import (
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"
)

// RouteState is a route's state: block, WireMock's scenario on a stub
// (scenarioName, requiredScenarioState, newScenarioState): the route
// answers only while the named state is Is, and its answer moves the
// state to To. A state never set is Started.
//
//	state: { name: todo, is: Started, to: one-item }             # one state of the name
//	state: { name: order, per: '{{ .Request.Vars.id }}', is: paid } # one state per order id
//
// A state is its session's (the route's file's session:), as a route's
// sequence is: two parallel tests move their own.
type RouteState struct {
	Pos Pos
	// Name names the state; routes that name it share it.
	Name string
	// Per, when set, renders the key of the request's instance of the
	// state (what a response template sees, the path's variables as
	// .Request.Vars): each order id has its own. Nil for one state of the
	// name; one that renders nothing is the name's keyless state too.
	Per *template.Template
	// PerText is per: as written, for listings.
	PerText string
	// Is is the value the state must have for the route to match; "" for
	// any value. IsPos is where it was written.
	Is    string
	IsPos Pos
	// To is the value the state takes once the route answered; "" leaves
	// it.
	To string
}

// StateStarted is a state's value before anything moved it.
const StateStarted = "Started"

// MaxStateValue bounds what is: and to: may be, in bytes, as the state
// store bounds what it keeps.
const MaxStateValue = 1024

var stateFields = []string{"name", "per", "is", "to"}

// stateNameRE is what a state's name may be: it travels in an admin
// path (/__admin/states/NAME), unescaped.
var stateNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidStateName reports whether name is a state's name.
func ValidStateName(name string) bool { return stateNameRE.MatchString(name) }

// routeState decodes a route's state: block.
func (d *fileDecoder) routeState(n *yaml.Node) *RouteState {
	v := d.resolve(n)
	if v.Kind != yaml.MappingNode {
		d.fail(v, "state", "want a mapping like { name: order, is: Started, to: paid }, got %s", describe(v))
		return nil
	}
	before := len(d.errs)
	fs, ok := d.fields(n, "state", stateFields...)
	if !ok {
		return nil
	}
	// After a misspelt field, "want is: or to:" only repeats the mistake.
	misspelt := len(d.errs) > before
	st := &RouteState{Pos: d.pos(v)}
	if p, ok := fs["name"]; ok {
		if name, ok := d.str(p.val, "state.name"); ok {
			if !ValidStateName(name) {
				d.fail(d.resolve(p.val), "state.name", "%q is not a state name: want 1 to 64 letters, digits, '.', '_' or '-'", name)
			}
			st.Name = name
		}
	} else {
		d.fail(v, "state", "name: is required (the state the route reads or moves, e.g. name: order)")
	}
	if p, ok := fs["per"]; ok {
		if text, ok := d.str(p.val, "state.per"); ok {
			if strings.TrimSpace(text) == "" {
				d.fail(d.resolve(p.val), "state.per", "must not be empty; want what tells the instances apart, e.g. '{{ .Request.Vars.id }}'")
			} else if t, err := parseTemplate(text); err != nil {
				d.templateError(d.resolve(p.val), "state.per", err)
			} else {
				st.Per, st.PerText = t, text
			}
		}
	}
	value := func(key string) (string, Pos) {
		p, ok := fs[key]
		if !ok {
			return "", Pos{}
		}
		s, ok := d.str(p.val, "state."+key)
		switch {
		case !ok:
		case strings.TrimSpace(s) == "":
			d.fail(d.resolve(p.val), "state."+key, "must not be empty; a state never set is %s", StateStarted)
		case len(s) > MaxStateValue:
			d.fail(d.resolve(p.val), "state."+key, "longer than %d bytes", MaxStateValue)
		default:
			return s, d.pos(d.resolve(p.val))
		}
		return "", Pos{}
	}
	st.Is, st.IsPos = value("is")
	st.To, _ = value("to")
	_, hasIs := fs["is"]
	_, hasTo := fs["to"]
	if !hasIs && !hasTo && !misspelt {
		d.fail(v, "state", "want is: (the value the route answers in), to: (the value its answer moves the state to), or both")
	}
	if len(d.errs) > before {
		return nil
	}
	return st
}

// Describe says what the state block does, for listings: `state order
// [{{ .Request.Vars.id }}] is "Started", to "paid"`.
func (st *RouteState) Describe() string {
	out := "state " + st.Name
	if st.Per != nil {
		out += " [" + st.PerText + "]"
	}
	if st.Is != "" {
		out += " is " + strconv.Quote(st.Is)
	}
	if st.To != "" {
		if st.Is != "" {
			out += ","
		}
		out += " to " + strconv.Quote(st.To)
	}
	return out
}
