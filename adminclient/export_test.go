package adminclient

import "time"

// SetPageSize makes Routes read pages of n routes.
func SetPageSize(c *Client, n int) { c.pageSize = n }

// SetStreamIdle replaces how long Stream waits for a byte, until the
// test ends.
func SetStreamIdle(t interface{ Cleanup(func()) }, d time.Duration) {
	old := streamIdle
	streamIdle = d
	t.Cleanup(func() { streamIdle = old })
}
