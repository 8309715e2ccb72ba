// Package schema owns the JSON Schema (draft 2020-12) of the scenario file
// format, scenario.schema.json, which editors running the YAML language
// server use to complete and check scenario files as they are typed.
//
// The schema describes what the loader in package scenarios accepts; the
// loader stays the authority (it checks what a schema cannot: paths,
// regexes, templates, names unique across files). The tests of package
// scenarios validate the examples and generated samples of every field
// against this file, and refuse a field the loader knows but the schema
// does not, so the two cannot drift apart unnoticed. This package imports
// none of ours; `scenariomock schema` prints the file.
package schema
