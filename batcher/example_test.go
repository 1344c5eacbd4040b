package batcher_test

import (
	"fmt"
	"time"

	"github.com/connkit/connkit/batcher"
)

// A writer that is free takes whatever has been collected: here it is busy
// while three items come, and then takes them together.
func ExampleNew() {
	b, err := batcher.New(batcher.Policy{Count: 2, Bytes: 6}, batcher.Hold{Count: 4}, func(s string) int { return len(s) })
	if err != nil {
		panic(err)
	}
	now := time.Now()
	b.Add("a", now)
	why, due := b.Due(now)
	fmt.Println(due, why, b.Take()) // an idle writer takes a lone item at once
	for _, s := range []string{"b", "cc", "ddddddddd"} {
		b.Add(s, now) // ...and while it writes, more come
	}
	fmt.Println(b.Room()) // four held: stop taking items in
	b.Done()
	for why, due := b.Due(now); due; why, due = b.Due(now) {
		fmt.Println(why, b.Take())
		b.Done()
	}
	// Output:
	// true at once [a]
	// false
	// size [b cc]
	// bytes [ddddddddd]
}

// With a delay, an incomplete batch waits for its oldest item to have
// waited that long; a complete one is due at once.
func ExampleBatcher_Wait() {
	b, err := batcher.New[int](batcher.Policy{Count: 3, Delay: time.Second}, batcher.Hold{}, nil)
	if err != nil {
		panic(err)
	}
	start := time.Now()
	b.Add(1, start)
	b.Add(2, start.Add(300*time.Millisecond))
	wait, ok := b.Wait(start.Add(500 * time.Millisecond))
	fmt.Println(wait, ok)
	b.Add(3, start.Add(600*time.Millisecond))
	why, due := b.Due(start.Add(600 * time.Millisecond))
	fmt.Println(due, why, b.Take())
	// Output:
	// 500ms true
	// true size [1 2 3]
}
