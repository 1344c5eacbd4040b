package plugin

// procs sets how many threads run the process's Go code at once
// (GOMAXPROCS) from the batches a destination gets. While they are lone
// (see dueBatch.lone), as Conduit's v2 engine sends records from a source
// without batch settings, one message at a time and each after the last
// one's ack, nothing of the plugin's runs in parallel: the record goes
// from gRPC's reader to the owner, to the connector and to gRPC's writer,
// one after the other. A second thread then only costs the wake-ups that
// hand each record between threads, a futex call on each side, which
// came to about a quarter of the plugin's processor time per record in
// the seed pipeline (bench conduit, v2 engine, no settings). So after
// loneRun lone batches in a row the process runs on one thread, and on
// as many as it had again at the first batch that is not lone, or at
// Run's end. It is the policy of one destination's owner loop, which
// alone calls it; a plugin process serves one connector.
type procs struct {
	set  func(n int) (previous int) // runtime.GOMAXPROCS; nil: the process's setting is left alone
	own  int                        // the setting before one thread, while one
	lone int                        // lone batches in a row
}

// loneRun is how many lone batches in a row make the process run on one
// thread: enough that a lull under a steady load does not.
const loneRun = 64

// batch notes a batch handed out, lone or not.
func (p *procs) batch(lone bool) {
	if p.set == nil {
		return
	}
	if !lone {
		p.lone = 0
		p.restore()
		return
	}
	if p.lone++; p.lone == loneRun && p.own == 0 {
		p.own = p.set(1)
	}
}

// restore gives the process back the threads it had, if it runs on one.
func (p *procs) restore() {
	if p.own > 0 {
		p.set(p.own)
		p.own = 0
	}
}
