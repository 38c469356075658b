package app

import "github.com/waitroom/waitroom/internal/queue"

// LineStoreForTest is the instance's line store (the breaker's view of
// it), for end-to-end tests that must read what no answer shows: a draw's
// seed before the draw.
func (m *Main) LineStoreForTest() queue.Inspector { return m.line.store }
