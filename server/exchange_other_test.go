//go:build !linux

package server

import (
	"errors"
	"testing"
)

// exchangeNames needs renameat2 RENAME_EXCHANGE, which only Linux has.
func exchangeNames(t testing.TB, a, b string) error {
	t.Helper()
	return errors.ErrUnsupported
}
