package plugin

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/connkit/connkit/batcher"
	"github.com/matryer/is"
)

// fakeProcs stands for runtime.GOMAXPROCS, starting at 4, and keeps the
// settings made.
type fakeProcs struct {
	n   int
	set []int
}

func (f *fakeProcs) setProcs(n int) int {
	prev := f.n
	f.n = n
	f.set = append(f.set, n)
	return prev
}

// TestProcsPolicy: one thread after loneRun lone batches in a row, the
// process's own again at the first batch that is not lone, or at the end;
// a run broken before loneRun starts over.
func TestProcsPolicy(t *testing.T) {
	is := is.New(t)
	f := &fakeProcs{n: 4}
	p := procs{set: f.setProcs}
	for range loneRun - 1 {
		p.batch(true)
	}
	p.batch(false)
	for range loneRun - 1 {
		p.batch(true)
	}
	is.Equal(f.set, []int(nil)) // no run of loneRun yet
	p.batch(true)
	is.Equal(f.n, 1)
	for range 3 * loneRun {
		p.batch(true)
	}
	is.Equal(f.set, []int{1}) // set once
	p.batch(false)
	is.Equal(f.n, 4)
	p.restore()
	is.Equal(f.set, []int{1, 4}) // nothing to restore
	for range loneRun {
		p.batch(true)
	}
	p.restore()
	is.Equal(f.set, []int{1, 4, 1, 4})
	var untouched procs // a process whose setting is left alone
	for range loneRun {
		untouched.batch(true)
	}
	untouched.restore()
}

// TestDestinationOneThreadWhileLone: a destination fed one record at a
// time, each once the last is acked, as Conduit's v2 engine does, has the
// process run on one thread after loneRun records; a burst that arrives
// while a Write runs gives it back its threads, and so does Run's end.
func TestDestinationOneThreadWhileLone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		f := &fakeProcs{n: 4}
		w := &writeLog{delay: time.Millisecond}
		d := destinationServerOf(w, batcher.Policy{}, Retry{})
		d.setProcs = f.setProcs
		r := logWrites(t, d, w).run()
		for i := 1; i <= loneRun; i++ {
			r.send(i, i)
			synctest.Wait()
			time.Sleep(time.Millisecond)
			synctest.Wait()
			is.Equal(r.acks(), []string{strconv.Itoa(i)})
		}
		is.Equal(f.set, []int{1})
		// A burst: records arrive one message each while Writes run.
		r.sendEach(loneRun+1, loneRun+20)
		time.Sleep(time.Second)
		synctest.Wait()
		is.Equal(f.n, 4)
		is.Equal(r.finish(strconv.Itoa(loneRun+20)), upTo(loneRun + 20)[loneRun:])
		is.Equal(f.set, []int{1, 4})
	})
}
