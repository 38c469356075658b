package challenge

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// Solve does the work as the waiting page does, natively: workers
// goroutines try interleaved counters (worker i tries i, i+workers, …)
// until one derived key has the prefix. It is what a script pays per place,
// and what the tests and the bench tools use to get in. ctx ending stops it.
func Solve(ctx context.Context, c Challenge, workers int) (Payload, error) {
	if err := c.Parameters.check(); err != nil {
		return Payload{}, err
	}
	workers = max(workers, 1)
	start := time.Now()
	work, stop := context.WithCancel(ctx)
	defer stop()
	found := make(chan Solution, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int64(w); n <= 1<<32-1; n += int64(workers) {
				if work.Err() != nil {
					return
				}
				key := c.Parameters.derive(uint32(n))
				if hasPrefix(key, c.Parameters.KeyPrefix) {
					found <- Solution{Counter: n, DerivedKey: hex.EncodeToString(key)}
					stop()
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case s := <-found:
		s.Time = float64(time.Since(start).Microseconds()) / 1000
		return Payload{Challenge: c, Solution: s}, nil
	default:
	}
	if err := ctx.Err(); err != nil {
		return Payload{}, err
	}
	return Payload{}, errors.New("challenge: no counter solves it")
}
