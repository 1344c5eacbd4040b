package middleware

import (
	"context"
	"fmt"
	"math"

	"github.com/conduitio/conduit-commons/opencdc"
	"golang.org/x/time/rate"
)

// RateLimit is the rate limit settings for destinations, with the
// incumbent Conduit SDK's parameters. Zero PerSecond means no limit.
type RateLimit struct {
	PerSecond float64 `param:"sdk.rate.perSecond" validate:"gt=-1" desc:"Maximum number of records written per second; 0 means no limit."`
	Burst     int     `param:"sdk.rate.burst" validate:"gt=-1" desc:"Number of records that may be written at once, in one Write; 0 means the rate per second, rounded up."`
}

// ForDestination returns [LimitRate] with these settings.
func (r RateLimit) ForDestination(Env) (Middleware[Destination], error) {
	return LimitRate(r.PerSecond, r.Burst), nil
}

// LimitRate returns middleware that writes at most perSecond records per
// second on average and at most burst records in one Write (0 means
// perSecond rounded up). It waits before each Write for the records it is
// about to write, so no record is written early, and a batch larger than
// burst is written in several Writes. perSecond 0 returns the destination
// unchanged.
func LimitRate(perSecond float64, burst int) Middleware[Destination] {
	return func(d Destination) Destination {
		if perSecond <= 0 {
			return d
		}
		if burst <= 0 {
			burst = ceilInt(perSecond)
		}
		return &rateLimited{Destination: d, limiter: rate.NewLimiter(rate.Limit(perSecond), burst)}
	}
}

type rateLimited struct {
	Destination
	limiter *rate.Limiter
}

func (r *rateLimited) Unwrap() Destination { return r.Destination }

func (r *rateLimited) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	written := 0
	for written < len(records) {
		size := min(len(records)-written, r.limiter.Burst())
		chunk := records[written : written+size : written+size]
		if err := r.limiter.WaitN(ctx, len(chunk)); err != nil {
			return written, fmt.Errorf("rate limit: waiting to write record %d: %w", written, err)
		}
		n, err := r.Destination.Write(ctx, chunk)
		if n < 0 || n > len(chunk) {
			// Counting such an n would make records of the next chunk
			// look written; it confirms nothing of this chunk.
			broke := fmt.Errorf("destination broke the Write contract: returned n=%d for %d records, expected 0 <= n <= %d", n, len(chunk), len(chunk))
			if err != nil {
				broke = fmt.Errorf("%w (Write error: %w)", broke, err)
			}
			return written, broke
		}
		written += n
		if err != nil || n < len(chunk) {
			return written, err
		}
	}
	return written, nil
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
