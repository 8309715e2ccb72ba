// Package scenarios owns the scenario language: the model of routes,
// conditions and responses, the YAML loader that keeps file:line:col
// positions, validation, and the watcher that notices edits.
//
// It sits first in the flow:
//
//	files ─▶ scenarios.Load ─▶ *scenarios.Set ─▶ matcher.Compile ─▶ *matcher.Table
//
// A Set is complete and immutable once Load returns: defaults are merged
// into responses, bodies are encoded, bodyFile contents are read, regular
// expressions and templates are compiled. Nothing downstream reads a file.
//
// The package knows nothing of HTTP serving and imports none of the other
// scenariomock packages.
package scenarios
