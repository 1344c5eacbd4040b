// Package quietconn makes a connection's reads and writes without telling
// Go's scheduler that they are system calls.
//
// The scheduler's entry to a system call wakes its monitor thread if that
// thread went to sleep because every processor was idle, and the woken
// monitor then polls every 20 µs until the process is idle again. A plugin
// that moves one record at a time goes idle several times a record (it
// waits for Conduit, then for the database), so it woke the monitor that
// often: a fifth of the plugin's processor time in a CPU profile of the
// seed pipeline on Conduit's v2 engine. A read or a write on a non-blocking
// socket returns at once, so it needs nothing the monitor does for a call
// that blocks; Wrap makes those calls directly, and the runtime's network
// poller still parks the goroutine until the socket is ready, and still
// applies the connection's deadlines.
package quietconn

import "net"

// Wrap returns c with quiet reads and writes if c is a socket this
// platform can do that for, and c itself otherwise. Every other method is
// c's.
func Wrap(c net.Conn) net.Conn { return wrap(c) }
