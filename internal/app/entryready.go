package app

import (
	"time"

	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue/signals"
)

// tellWhoIsLetIn publishes entry.ready for each signed-in user this
// instance lets in (issue 55, docs/operations.md "Telling people it is
// their turn"): the admitter and the service say whom (signals.LetIn, only
// for queues whose notifyOnReady is on), and the instance that let them in
// is the one that tells, directly (events.Direct). An anonymous session has
// no contact the shop knows: it is left out by its id alone.
func (m *Main) tellWhoIsLetIn(sh shop) {
	m.line.signals.Listen(signals.Listener{LetIn: func(q string, users []string, at, expires time.Time) {
		var signed []string
		for _, u := range users {
			if !identity.Anonymous(u) {
				signed = append(signed, u)
			}
		}
		sh.direct.Ready(q, signed, at, expires)
	}})
}
