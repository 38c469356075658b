package memstore_test

import (
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
)

// TestConformance runs the suite on a fake clock: the store takes its
// clock, so no test waits in real time or depends on the machine's pace.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (queue.Store, storetest.Clock) {
		clock := storetest.NewFakeClock()
		return memstore.New(clock.Now), clock
	})
}
