//go:build !unix

package scenarios

import "testing"

// mkfifo skips: named pipes are a Unix file type.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skip("no named pipes on this system")
}
