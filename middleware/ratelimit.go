package middleware

import (
	"context"
	"fmt"
	"math"

	"github.com/conduitio/conduit-commons/opencdc"
	"golang.org/x/time/rate"
)

// LimitRate writes at most perSecond records per second on average and at
// most burst records in one Write (0 means perSecond rounded up): the
// sdk.rate.perSecond and sdk.rate.burst parameters. It waits before each
// Write for the records it is about to write, so no record is written
// early, and a batch larger than burst is written in several Writes. With
// perSecond 0 or less it returns Write unchanged.
func LimitRate(perSecond float64, burst int) func(Write) Write {
	if burst <= 0 {
		burst = ceilInt(perSecond)
	}
	return func(write Write) Write {
		if perSecond <= 0 {
			return write
		}
		limiter := rate.NewLimiter(rate.Limit(perSecond), burst)
		return func(ctx context.Context, records []opencdc.Record) (int, error) {
			written := 0
			for written < len(records) {
				size := min(len(records)-written, limiter.Burst())
				chunk := records[written : written+size : written+size]
				if err := limiter.WaitN(ctx, len(chunk)); err != nil {
					return written, fmt.Errorf("rate limit: waiting to write record %d: %w", written, err)
				}
				n, err := write(ctx, chunk)
				if n < 0 || n > len(chunk) {
					// Counting such an n would make records of the next
					// chunk look written; it confirms nothing of this chunk.
					return written, fmt.Errorf("destination broke the Write contract: returned n=%d for %d records, a chunk of the rate limit (Write error: %v)", n, len(chunk), err)
				}
				written += n
				if err != nil || n < len(chunk) {
					return written, err
				}
			}
			return written, nil
		}
	}
}

// ceilInt returns f rounded up, or the largest int when that does not fit
// one: converting a float beyond it to int gives nonsense (a negative
// burst, on amd64).
func ceilInt(f float64) int {
	if c := math.Ceil(f); c < math.MaxInt {
		return int(c)
	}
	return math.MaxInt
}
