//go:build !linux

package scenarios

import (
	"errors"
	"testing"
)

// exchange needs renameat2 RENAME_EXCHANGE, which only Linux has.
func exchange(t testing.TB, a, b string) error {
	t.Helper()
	return errors.ErrUnsupported
}
