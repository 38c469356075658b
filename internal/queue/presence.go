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
//
// A mark says whether the page was hidden (issue 55; AbandonAfterHidden):
// a poll's says what its query said (hidden=1), and a page's beacon is a
// status read whose answer nobody reads; a hidden word marks whatever the
// position, so that a page hidden far back is still known hidden when the
// front reaches it (Service.Status). Beacons go through
// the same batch rather than straight to the store: a user's marks on one
// instance then reach the store in the order made (the last one made in a
// flush's second wins), where a beacon written at once could be overwritten
// by an older poll's mark flushed after it. (Between instances the store
// keeps a hidden mark against a visible one that follows it closely:
// admission.HiddenHolds.)
type presence struct {
	store line

	mu    sync.Mutex
	marks map[string]map[string]bool // queue → user → hidden
}

// presenceMaxUsers bounds the marks one instance holds per queue between
// flushes; beyond it a mark is dropped (that user's next poll marks them).
const presenceMaxUsers = 1 << 18

// PresenceFlush is how often an instance sends its marks.
const presenceFlush = time.Second

func newPresence(store line) *presence {
	return &presence{store: store, marks: map[string]map[string]bool{}}
}

// note marks the user, as hidden or not, if their standing makes them one
// whose presence admission will check: within the reach, as every poll.
func (p *presence) note(queue, user string, e Standing, hidden bool) {
	// A shadow place is no one the real line's no-show checks ask about:
	// its marks would only cost the store writes.
	if e.State != Waiting || e.PreQueue || e.Shadow || e.Pace.Reach == 0 || e.Position > e.Pace.Reach {
		return
	}
	p.mark(queue, user, hidden)
}

// mark marks the user, whatever their position (the store marks nobody
// out of line).
func (p *presence) mark(queue, user string, hidden bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.marks[queue]
	if !ok {
		m = map[string]bool{}
		p.marks[queue] = m
	}
	if _, held := m[user]; held || len(m) < presenceMaxUsers {
		m[user] = hidden
	}
}

// flush sends every mark gathered since the last flush, every queue's at
// once (a queue whose store does not answer holds up no other's): the
// visible and the hidden in a call each. Failures are logged by troubles.
func (p *presence) flush(ctx context.Context, troubles *perqueue.Troubles) {
	p.mu.Lock()
	batch := p.marks
	p.marks = make(map[string]map[string]bool, len(batch))
	p.mu.Unlock()
	queues := make([]string, 0, len(batch))
	for q := range batch {
		queues = append(queues, q)
	}
	perqueue.Each(ctx, queues, perqueue.CallTimeout, func(qctx context.Context, q string) {
		var users [2][]string // visible, hidden
		for u, hidden := range batch[q] {
			if hidden {
				users[1] = append(users[1], u)
			} else {
				users[0] = append(users[0], u)
			}
		}
		var err error
		for i, list := range users {
			if len(list) > 0 && err == nil {
				err = p.store.Seen(qctx, q, list, i == 1)
			}
		}
		if ctx.Err() == nil {
			troubles.Result(q, err)
		}
	})
}
