package plugin

import "sync"

// workers run a flow's jobs on goroutines they keep for the next job, as
// many as were ever busy at once: a goroutine per job would start each
// job on a new, small stack and grow it anew, which costs tens of µs a
// Write (a one-record Write of the Postgres destination), on the path of
// every record. Only the owner's loop calls them.
type workers[J any] struct {
	do   func(J)
	jobs chan J // to the goroutines waiting for a job
	idle int    // goroutines waiting for a job
	wg   sync.WaitGroup
}

// newWorkers returns workers that do each job with do, at most most at
// once.
func newWorkers[J any](most int, do func(J)) *workers[J] {
	return &workers[J]{do: do, jobs: make(chan J, most)}
}

// start has j done: by a goroutine waiting for a job, or a new one.
func (w *workers[J]) start(j J) {
	if w.idle > 0 {
		w.idle--
		w.jobs <- j // never waits: at most most goroutines, each with one job
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for ok := true; ok; j, ok = <-w.jobs {
			w.do(j)
		}
	}()
}

// finished notes that a job's goroutine has reported its end: it waits
// for the next job.
func (w *workers[J]) finished() { w.idle++ }

// close ends the goroutines, which must all wait for a job, and waits
// for them.
func (w *workers[J]) close() {
	close(w.jobs)
	w.wg.Wait()
}
