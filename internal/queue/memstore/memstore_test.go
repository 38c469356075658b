package memstore_test

import (
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) queue.Store { return memstore.New(nil) })
}
