package server

import (
	"testing"

	"golang.org/x/sys/unix"
)

// exchangeNames swaps the directory entries a and b atomically
// (renameat2 RENAME_EXCHANGE), so that at every instant each name exists.
func exchangeNames(t testing.TB, a, b string) error {
	t.Helper()
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
