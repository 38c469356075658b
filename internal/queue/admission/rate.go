package admission

import (
	"fmt"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// RateFromPool derives the admission rate from the bottleneck: the order
// API's share of the database pool, each connection serving 1/latency
// orders per second. It returns the rate and a sentence explaining it.
func RateFromPool(poolSize int, share float64, orderLatency time.Duration) (float64, string, error) {
	if poolSize < 1 || !(share > 0 && share <= 1) || orderLatency <= 0 {
		return 0, "", fmt.Errorf("%w: pool size ≥ 1, share in (0,1] and latency > 0 are needed, got %d, %v, %v",
			queue.ErrInvalidConfig, poolSize, share, orderLatency)
	}
	conns := float64(poolSize) * share
	perConn := float64(time.Second) / float64(orderLatency)
	rate := conns * perConn
	why := fmt.Sprintf("%d conns × %g × 1000/%g ms = %g/s", poolSize, share,
		float64(orderLatency)/float64(time.Millisecond), rate)
	return rate, why, nil
}
