package pgtest

import (
	"math/rand/v2"
	"time"
)

// Crash stops the server at once, as a crash would (pg_ctl -m immediate:
// every process ends without a checkpoint and clients see their
// connections break), leaves it down for down, and starts it again on the
// same port, where it recovers from its WAL. Only what was written to the
// WAL survives: commits made with synchronous_commit=off (the default
// here) in the last moments before the crash may be lost; StartWith
// "synchronous_commit=on" keeps every commit.
func (s *Server) Crash(down time.Duration) error {
	if err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return err
	}
	time.Sleep(down)
	return s.start()
}

// CrashTimes crashes the server n times, each down from half a second to
// 1.5 s, after up to a second and a half of work; it returns the first
// failure, if any.
func (s *Server) CrashTimes(n int) error {
	for range n {
		time.Sleep(time.Duration(500+rand.N(1000)) * time.Millisecond)
		if err := s.Crash(time.Duration(500+rand.N(1000)) * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}
