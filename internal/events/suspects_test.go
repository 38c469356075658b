package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/events"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/suspect"
)

// shadowStats is an instance whose stats carry the shadow line's totals
// as set here: the detector reads them, whichever store keeps the line.
type shadowStats struct {
	instance
	entered, cleared *atomic.Int64
}

func (s shadowStats) Stats(ctx context.Context, q string) (queue.Stats, error) {
	st, err := s.instance.Stats(ctx, q)
	st.ShadowEnteredTotal, st.ClearedTotal = s.entered.Load(), s.cleared.Load()
	return st, err
}

// TestSuspectsReachTheSalesRow: what two instances' tallies counted is in
// the minute's row once their detectors have passed, added across them,
// each count once however many passes follow; the shadow line's places
// taken and cleared are the store's totals' growth in the minute, read by
// either. A place no signal marked is not counted.
func TestSuspectsReachTheSalesRow(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 4, 20, 0, 30, 0, time.UTC)
	store := memstore.New(func() time.Time { return at })
	const q = "drop"
	if err := store.PutConfig(ctx, q, queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	var entered, cleared atomic.Int64
	entered.Store(3)
	type node struct {
		in       shadowStats
		tally    *events.SuspectTally
		detector *events.Detector
	}
	var nodes []node
	for range 2 {
		line := signals.New()
		in := shadowStats{instance{queue.NewService(store, 0, line), operate.New(store, line)}, &entered, &cleared}
		pending := &rollup.Pending{}
		nodes = append(nodes, node{in, events.NewSuspectTally(pending), events.NewDetector(events.Options{Store: in, Publisher: &collector{},
			Queues: func(context.Context) []string { return []string{q} }, Pending: pending})})
	}
	sig := func(s ...suspect.Signal) []string {
		var out []string
		for _, x := range s {
			out = append(out, string(x))
		}
		return out
	}
	pass := func() {
		for _, n := range nodes {
			n.detector.Pass(ctx)
		}
	}
	nodes[0].tally.Count(q, sig(suspect.EdgeScore), suspect.Shadow)
	nodes[0].tally.Count(q, sig(suspect.EdgeScore, suspect.AddressRange), suspect.Refuse)
	nodes[1].tally.Count(q, sig(suspect.PollRate), suspect.Challenge)
	nodes[1].tally.Count(q, nil, suspect.Shadow)
	pass()
	entered.Store(5)
	cleared.Store(1)
	nodes[1].tally.Count(q, sig(suspect.AddressRange), suspect.Allow)
	pass()
	pass()

	r, err := nodes[0].in.Rollups(ctx, q, at.Add(-time.Hour), at.Add(time.Minute))
	if err != nil || len(r.Minutes) == 0 || !r.Minutes[0].Start.Equal(at.Truncate(time.Minute)) {
		t.Fatalf("rollups: %+v, %v; want %v's row first", r.Minutes, err, at.Truncate(time.Minute))
	}
	m := r.Minutes[0]
	got := rollup.Figures{Suspects: m.Suspects, Signals: m.Signals, Shadowed: m.Shadowed, RefusedSuspects: m.RefusedSuspects,
		ChallengedSuspects: m.ChallengedSuspects, Cleared: m.Cleared}
	want := rollup.Figures{Suspects: 4, Signals: map[string]int64{"edge_score": 2, "address_range": 2, "poll_rate": 1},
		Shadowed: 2, RefusedSuspects: 1, ChallengedSuspects: 1, Cleared: 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the minute's likely bots (-want +got):\n%s", d)
	}
}
