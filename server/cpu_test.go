package server

import (
	"testing"
	"time"
)

// cpuMeter reports a benchmark's process CPU time per operation as
// cpu-ns/op, beside ns/op. On a shared machine ns/op is wall time and
// counts the time the benchmark waited for a core; CPU time counts what
// the server spent (as bench/load's "server CPU per request" does), and
// moves far less with the load of other processes.
type cpuMeter struct{ start time.Duration }

// startCPU starts measuring; call it just before the measured loop.
func startCPU() cpuMeter { return cpuMeter{start: processCPU()} }

// report adds cpu-ns/op for n operations.
func (m cpuMeter) report(b *testing.B, n int) {
	if used := processCPU() - m.start; used > 0 && n > 0 {
		b.ReportMetric(float64(used)/float64(n), "cpu-ns/op")
	}
}
