package queue

import (
	"context"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue/perqueue"
)

// presence batches "seen" marks for no-show skipping (Config.AbandonAfter):
// a waiting user near enough the front for their presence to matter
// (Pace.Reach) who asks for their status is marked here, and about once a
// second every queue's marks go to the store in one call (Store.Seen). Users
// further back are not marked at all, so the store holds marks only for the
// users admission may reach within the next AbandonAfter or so, and a poll
// answered from a snapshot still costs no round trip of its own.
type presence struct {
	store line

	mu    sync.Mutex
	marks map[string]map[string]struct{}
}

// presenceMaxUsers bounds the marks one instance holds per queue between
// flushes; beyond it a mark is dropped (that user's next poll marks them).
const presenceMaxUsers = 1 << 18

// PresenceFlush is how often an instance sends its marks.
const presenceFlush = time.Second

func newPresence(store line) *presence {
	return &presence{store: store, marks: map[string]map[string]struct{}{}}
}

// note marks the user if their standing makes them one whose presence
// admission will check.
func (p *presence) note(queue, user string, e Standing) {
	// A shadow place is no one the real line's no-show checks ask about:
	// its marks would only cost the store writes.
	if e.State != Waiting || e.PreQueue || e.Shadow || e.Pace.Reach == 0 || e.Position > e.Pace.Reach {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.marks[queue]
	if !ok {
		m = map[string]struct{}{}
		p.marks[queue] = m
	}
	if len(m) < presenceMaxUsers {
		m[user] = struct{}{}
	}
}

// flush sends every mark gathered since the last flush, every queue's at
// once (a queue whose store does not answer holds up no other's).
// Failures are logged by troubles.
func (p *presence) flush(ctx context.Context, troubles *perqueue.Troubles) {
	p.mu.Lock()
	batch := p.marks
	p.marks = make(map[string]map[string]struct{}, len(batch))
	p.mu.Unlock()
	queues := make([]string, 0, len(batch))
	for q := range batch {
		queues = append(queues, q)
	}
	perqueue.Each(ctx, queues, perqueue.CallTimeout, func(qctx context.Context, q string) {
		users := make([]string, 0, len(batch[q]))
		for u := range batch[q] {
			users = append(users, u)
		}
		err := p.store.Seen(qctx, q, users)
		if ctx.Err() == nil {
			troubles.Result(q, err)
		}
	})
}
