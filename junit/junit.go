package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Suite is one <testsuite>: a named group of cases run at Timestamp.
type Suite struct {
	Name      string
	Timestamp time.Time
	Cases     []Case
}

// Case is one <testcase>. A case with neither Failure nor Error passed.
type Case struct {
	Name      string
	ClassName string
	Time      time.Duration
	// Failure is a check that did not hold: Message is one line (the
	// failure's message attribute), Text the full report (its body).
	Failure *Problem
	// Error is a check that could not run (the server refused it, or did
	// not answer).
	Error *Problem
	// Output is what the check printed when it held (<system-out>).
	Output string
}

// Problem is a failure or an error of a case.
type Problem struct {
	Message string
	Type    string
	Text    string
}

// The XML shapes, in the order junit-4.xsd's sequences want.
type (
	xmlSuites struct {
		XMLName  xml.Name   `xml:"testsuites"`
		Name     string     `xml:"name,attr,omitempty"`
		Tests    string     `xml:"tests,attr"`
		Failures string     `xml:"failures,attr"`
		Errors   string     `xml:"errors,attr"`
		Time     string     `xml:"time,attr"`
		Suites   []xmlSuite `xml:"testsuite"`
	}
	xmlSuite struct {
		Name      string    `xml:"name,attr"`
		Tests     string    `xml:"tests,attr"`
		Failures  string    `xml:"failures,attr"`
		Errors    string    `xml:"errors,attr"`
		Time      string    `xml:"time,attr"`
		Timestamp string    `xml:"timestamp,attr,omitempty"`
		Cases     []xmlCase `xml:"testcase"`
	}
	xmlCase struct {
		Name      string      `xml:"name,attr"`
		ClassName string      `xml:"classname,attr,omitempty"`
		Time      string      `xml:"time,attr"`
		Error     *xmlProblem `xml:"error,omitempty"`
		Failure   *xmlProblem `xml:"failure,omitempty"`
		Output    string      `xml:"system-out,omitempty"`
	}
	xmlProblem struct {
		Message string `xml:"message,attr,omitempty"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

func problem(p *Problem) *xmlProblem {
	if p == nil {
		return nil
	}
	return &xmlProblem{Message: p.Message, Type: p.Type, Text: p.Text}
}

// Write writes suites as one JUnit XML document, named name.
func Write(w io.Writer, name string, suites ...Suite) error {
	doc := xmlSuites{Name: name}
	var tests, failures, errs int
	var total time.Duration
	for _, s := range suites {
		xs := xmlSuite{Name: s.Name}
		if !s.Timestamp.IsZero() {
			// junit-4.xsd takes any string; Jenkins reads ISO 8601 without a zone.
			xs.Timestamp = s.Timestamp.UTC().Format("2006-01-02T15:04:05")
		}
		var sf, se int
		var st time.Duration
		for _, c := range s.Cases {
			xs.Cases = append(xs.Cases, xmlCase{
				Name: c.Name, ClassName: c.ClassName, Time: seconds(c.Time),
				Error: problem(c.Error), Failure: problem(c.Failure), Output: c.Output,
			})
			if c.Failure != nil {
				sf++
			}
			if c.Error != nil {
				se++
			}
			st += c.Time
		}
		xs.Tests, xs.Failures, xs.Errors, xs.Time = strconv.Itoa(len(s.Cases)), strconv.Itoa(sf), strconv.Itoa(se), seconds(st)
		doc.Suites = append(doc.Suites, xs)
		tests += len(s.Cases)
		failures += sf
		errs += se
		total += st
	}
	doc.Tests, doc.Failures, doc.Errors, doc.Time = strconv.Itoa(tests), strconv.Itoa(failures), strconv.Itoa(errs), seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
