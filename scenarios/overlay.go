package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// Overlay returns the set that serves docs (runtime documents, each a Set
// from LoadDocument, in the order they were added) on top of base (the files):
// docs' files come first, so that at equal priority a runtime route is
// tried before a file route, the newest document first. base and docs are
// not changed. What spans files is checked again across them: a route
// name is unique within its session, one fallback, a collection seeded
// by one file, a webhook endpoint defined once, and each event of a
// document names endpoints that the files or the documents define.
// Every problem is returned
// (an *Error each, at its position), joined.
func Overlay(base *Set, docs []*Set) (*Set, error) {
	if len(docs) == 0 {
		return base, nil
	}
	out := &Set{Fallback: base.Fallback, Deps: base.Deps}
	var errs []*Error
	fail := func(pos Pos, format string, args ...any) {
		errs = append(errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}
	type sessionName struct{ session, name string }
	names := map[sessionName]Pos{}
	endpoints := map[string]Pos{}
	sources := map[string]Pos{}
	seeded := map[string]Pos{}
	add := func(set *Set) {
		for _, f := range set.Files {
			for _, r := range f.Routes {
				k := sessionName{r.Session, r.Name}
				if first, dup := names[k]; dup {
					fail(r.Pos, "route %q: duplicate route name (first at %s)", r.Name, first)
					continue
				}
				names[k] = r.Pos
			}
			if f.Webhooks != nil {
				for _, e := range f.Webhooks.Endpoints {
					if first, dup := endpoints[e.Name]; dup {
						fail(e.Pos, "webhooks: endpoint %q is defined twice (first at %s)", e.Name, first)
						continue
					}
					endpoints[e.Name] = e.Pos
				}
				if src := f.Webhooks.EndpointsFrom; src != nil {
					if first, dup := sources[src.Name()]; dup {
						fail(src.Pos, "webhooks.endpointsFrom: %q is read twice (first at %s)", src.Name(), first)
					} else {
						sources[src.Name()] = src.Pos
					}
				}
			}
		}
		for _, sd := range set.Seeds {
			if first, dup := seeded[sd.Name]; dup {
				fail(sd.Pos, "collections: %q is seeded twice (first at %s); seed a collection in one file", sd.Name, first)
				continue
			}
			seeded[sd.Name] = sd.Pos
		}
	}
	h := sha256.New()
	h.Write([]byte(base.Hash))
	// Checked files first, then documents oldest first, so that a clash
	// is reported at the document that came last.
	add(base)
	for _, d := range docs {
		add(d)
	}
	// Served newest first: a document added later wins over an earlier one.
	for _, d := range slices.Backward(docs) {
		out.Files = append(out.Files, d.Files...)
		out.Seeds = append(out.Seeds, d.Seeds...)
		if d.Fallback != nil {
			if out.Fallback != nil {
				fail(d.fallbackPos(), "a second fallback; only one file or runtime document may define it")
			} else {
				out.Fallback = d.Fallback
			}
		}
		fmt.Fprintf(h, "%d:%s", len(d.Hash), d.Hash)
	}
	out.Files = append(out.Files, base.Files...)
	out.Seeds = append(out.Seeds, base.Seeds...)
	// A document's events may go to the files' endpoints, and to other
	// documents' (those of the files were checked with them).
	kept := out.EventCollection() != "" || len(out.EndpointSources()) > 0
	for _, d := range docs {
		checkEvents(d.Routes(), endpoints, kept, fail)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	out.Hash = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// fallbackPos is where a set's fallback is written, for messages: the
// first line of its file.
func (s *Set) fallbackPos() Pos {
	if len(s.Files) > 0 {
		return Pos{File: s.Files[0].Path, Line: 1, Col: 1}
	}
	return Pos{}
}
