package testport

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// Low and High bound the ports Free draws from: [Low, High), below Linux's
// default ephemeral range.
const (
	Low  = 20000
	High = 32000
)

// Free is a port in [Low, High) on 127.0.0.1 that was free a moment ago.
// The test fails if 100 draws find none.
func Free(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := Low + rand.IntN(High-Low)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatalf("testport: no free port in [%d, %d) after 100 draws", Low, High)
	return 0
}

// Addr is 127.0.0.1:Free(t).
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Free(t)))
}
