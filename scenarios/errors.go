package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a scenario file. Line and Col are 1-based; zero means
// unknown.
type Pos struct {
	File string
	Line int
	Col  int
}

// String formats p as file:line:col, the form editors and CI logs link.
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem found in a scenario file.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Problems returns every scenario error inside err (as joined by Load), in
// file and position order. An error that is not an *Error is returned as a
// position-less *Error so that callers can list all problems uniformly.
func Problems(err error) []*Error {
	if err == nil {
		return nil
	}
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if errors.As(err, &e) {
			out = append(out, e)
			return
		}
		out = append(out, &Error{Msg: err.Error()})
	}
	walk(err)
	return out
}

func sortErrors(errs []*Error) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Pos, errs[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	sortErrors(errs)
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}

// Suggest returns the name among known that word most likely misspells, or
// "" when none is close. Case is ignored, so "bodyfile" suggests "bodyFile".
func Suggest(word string, known []string) string {
	best, bestDist := "", 3
	lw := strings.ToLower(word)
	for _, k := range known {
		lk := strings.ToLower(k)
		d := EditDistance(lw, lk)
		if lw == lk {
			d = 0
		}
		limit := 2
		if len(k) <= 4 {
			limit = 1
		}
		if d <= limit && d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// EditDistance returns the Levenshtein distance between a and b, counting
// bytes; only the first 64 bytes of each are compared, which is plenty for
// field names and paths and keeps the cost bounded.
func EditDistance(a, b string) int {
	a, b = a[:min(len(a), 64)], b[:min(len(b), 64)]
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
