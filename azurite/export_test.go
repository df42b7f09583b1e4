package azurite

import "time"

// For the external tests of this package.

// Pid returns the process id of s's Azurite.
func Pid(s *Server) int { return s.cmd.Process.Pid }

// Ports returns the loopback ports of s's Azurite (not its front's).
func Ports(s *Server) (blob, queue, table int) { return s.blobPort, s.queuePort, s.tablePort }

// WithClock makes o's buckets refill by now instead of the wall clock.
func WithClock(o *ThrottleOptions, now func() time.Time) *ThrottleOptions {
	o.clock = now
	return o
}

// Rates returns the partition and account rates o gives.
func Rates(o *ThrottleOptions) (partition, account float64) { return o.rates() }
