package batcher_test

import (
	"context"
	"fmt"

	"github.com/connkit/connkit/batcher"
)

func ExampleNew() {
	flush := func(_ context.Context, batch []string, why batcher.Reason) error {
		fmt.Println(batch, why)
		return nil
	}
	b, err := batcher.New(batcher.Policy{Count: 2, Bytes: 6}, func(s string) int { return len(s) }, flush)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, s := range []string{"a", "b", "cc", "ddddddddd", "e"} {
		if err := b.Add(ctx, s); err != nil {
			panic(err)
		}
	}
	_ = b.Close(ctx)
	// Output:
	// [a b] count
	// [cc] bytes
	// [ddddddddd] bytes
	// [e] explicit
}
