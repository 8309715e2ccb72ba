// Package nontest has no tests.
package nontest
