package front_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/front"
)

// line is a made-up line: tickets 1..last, the first admitted below head,
// and some who left.
func line(r *rand.Rand, last int64, leaveOdds float64) (head int64, waiting []int64, left []int64) {
	head = 1 + r.Int64N(last/2)
	for t := head; t <= last; t++ {
		if t > head && r.Float64() < leaveOdds {
			left = append(left, t)
		} else {
			waiting = append(waiting, t)
		}
	}
	return head, waiting, left
}

// snapshotOf is the snapshot a store would give of the line, keeping at
// most maxLeft leavers as the stores do.
func snapshotOf(head, last int64, waiting, left []int64, maxLeft int) queue.Snapshot {
	sn := queue.Snapshot{Head: head, Last: last, Length: int64(len(waiting)), Epoch: 7, Complete: len(left) <= maxLeft,
		Pace: queue.Pace{Rate: 100, Batch: 10}}
	sn.Left = left[:min(len(left), maxLeft)]
	return sn
}

func TestPlaceIsTheExactRankWhenTheLeaversAreListed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		head, waiting, left := line(r, 2000, 0.2)
		d := front.New(snapshotOf(head, 2000, waiting, left, queue.SnapshotMaxLeft), queue.InForce{Config: queue.DefaultConfig()})
		for rank, ticket := range waiting {
			pos, lowest, ok := d.Place(7, ticket)
			if !ok || pos != int64(rank+1) || lowest != pos {
				t.Fatalf("ticket %d: got place %d (lowest %d, ok %v), want %d exactly", ticket, pos, lowest, ok, rank+1)
			}
		}
		for _, ticket := range left {
			if _, _, ok := d.Place(7, ticket); ok {
				t.Fatalf("ticket %d left the line, yet the document places it", ticket)
			}
		}
		if _, _, ok := d.Place(7, head-1); head > 1 && ok {
			t.Fatalf("a ticket below the head (admitted) is placed")
		}
	}
}

func TestPlaceIsWithinTheStatedBoundWhenTheLeaversAreNot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		head, waiting, left := line(r, 5000, 0.3)
		d := front.New(snapshotOf(head, 5000, waiting, left, 100), queue.InForce{Config: queue.DefaultConfig()})
		if d.Unlisted != int64(len(left)-100) {
			t.Fatalf("unlisted leavers: got %d, want %d", d.Unlisted, len(left)-100)
		}
		for rank, ticket := range waiting {
			pos, lowest, ok := d.Place(7, ticket)
			exact := int64(rank + 1)
			if !ok || lowest > exact || exact > pos || pos-lowest > d.Unlisted {
				t.Fatalf("ticket %d: exact %d not within [%d, %d] (unlisted %d)", ticket, exact, lowest, pos, d.Unlisted)
			}
		}
	}
}

func TestTheDocumentPlacesNoOneWhereOnlyTheInstanceCan(t *testing.T) {
	sn := queue.Snapshot{Head: 10, Last: 20, Length: 11, Epoch: 7, Complete: true, Pace: queue.Pace{Rate: 100, Batch: 10}}
	for name, change := range map[string]func(*queue.Snapshot){
		"a draw":            func(s *queue.Snapshot) { s.Pace.Drawn = true },
		"an opening ahead":  func(s *queue.Snapshot) { s.Pace.OpensAt = time.Now().Add(time.Hour) },
		"an opening placed": func(s *queue.Snapshot) { s.Pace.Placing = true },
		"another epoch":     func(s *queue.Snapshot) { s.Epoch = 8 },
		"nobody waiting":    func(s *queue.Snapshot) { s.Head = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			s := sn
			change(&s)
			if _, _, ok := front.New(s, queue.InForce{Config: queue.DefaultConfig()}).Place(7, 15); ok {
				t.Error("placed a ticket the document cannot place")
			}
		})
	}
}

func TestAskWithinCoversTheAheadAndTwoBatches(t *testing.T) {
	c := queue.DefaultConfig()
	slow := front.New(queue.Snapshot{Pace: queue.Pace{Rate: 1, Batch: 10}}, queue.InForce{Config: c})
	if slow.AskWithin != 20 {
		t.Errorf("at 1/s, batches of 10: ask within %d, want two batches (20)", slow.AskWithin)
	}
	fast := front.New(queue.Snapshot{Pace: queue.Pace{Rate: 1000, Batch: 10}}, queue.InForce{Config: c})
	if want := int64(1000 * front.AskAhead.Seconds()); fast.AskWithin != want {
		t.Errorf("at 1000/s: ask within %d, want %d", fast.AskWithin, want)
	}
	held := front.New(queue.Snapshot{Pace: queue.Pace{Rate: 1000, Held: 200, Batch: 10}}, queue.InForce{Config: c})
	if want := int64(200 * front.AskAhead.Seconds()); held.AskWithin != want {
		t.Errorf("held at 200/s where 1000/s is in force: ask within %d, want %d (the estimate's rate)", held.AskWithin, want)
	}
	if !fast.Ask(fast.AskWithin) || fast.Ask(fast.AskWithin+1) {
		t.Error("Ask does not turn at AskWithin")
	}
}

func TestPresenceFollowsAbandonAfter(t *testing.T) {
	c := queue.DefaultConfig()
	sn := queue.Snapshot{Pace: queue.Pace{Rate: 100, Batch: 10, Reach: 12_000}}
	if d := front.New(sn, queue.InForce{Config: c}); d.PresenceWithin != 0 || d.PresenceEvery != 0 {
		t.Errorf("no-shows not skipped, yet a heartbeat: within %d every %v", d.PresenceWithin, d.PresenceEvery)
	}
	c.AbandonAfter = 30 * time.Second
	d := front.New(sn, queue.InForce{Config: c})
	if d.PresenceWithin != 12_000 || d.PresenceEvery != 10*time.Second {
		t.Errorf("abandonAfter 30 s, reach 12000: heartbeat within %d every %v, want 12000 every 10s", d.PresenceWithin, d.PresenceEvery)
	}
}

func TestTheDocumentCarriesTheNotifyLead(t *testing.T) {
	if d := front.New(queue.Snapshot{}, queue.InForce{Config: queue.DefaultConfig()}); d.NotifyLead != 0 {
		t.Errorf("by default the page is told only on READY, yet the document says a lead of %v", d.NotifyLead)
	}
	c := queue.DefaultConfig()
	c.NotifyLead = time.Minute
	if d := front.New(queue.Snapshot{}, queue.InForce{Config: c}); d.NotifyLead != time.Minute {
		t.Errorf("notifyLeadSeconds 60: the document says %v", d.NotifyLead)
	}
}

func TestTheDocumentSaysTheMessageInEveryLanguage(t *testing.T) {
	c, err := queue.Apply(queue.DefaultConfig(), map[string]any{"message": map[string]string{"en": "Sizes S and M are gone.", "ja": "S・Mは完売です。"}})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := front.New(queue.Snapshot{}, queue.InForce{Config: c}).Message.(map[string]string)
	if !ok || got["en"] != "Sizes S and M are gone." || got["ja"] != "S・Mは完売です。" {
		t.Errorf("message: got %#v", front.New(queue.Snapshot{}, queue.InForce{Config: c}).Message)
	}
	if !slices.Equal(front.New(queue.Snapshot{}, queue.InForce{Config: queue.DefaultConfig()}).Left, []int64{}) {
		t.Error("no leavers should be an empty list, not none")
	}
	if !slices.Equal(front.New(queue.Snapshot{}, queue.InForce{Config: queue.DefaultConfig()}).Cleared, []int64{}) {
		t.Error("no cleared places should be an empty list, not none")
	}
}

// TestTheDocumentSaysWhatTheNextTickLetsIn: a page tells 0 within the
// document's NextTickAdmits, the pace's (queue.Pace.NextTickAdmits): ten at
// the default, none at 2/s.
func TestTheDocumentSaysWhatTheNextTickLetsIn(t *testing.T) {
	c := queue.DefaultConfig()
	for rate, want := range map[float64]int64{100: 10, 2: 0} {
		d := front.New(queue.Snapshot{Pace: queue.Pace{Rate: rate, Batch: 10, Interval: 100 * time.Millisecond}}, queue.InForce{Config: c})
		if d.NextTickAdmits != want {
			t.Errorf("at %v/s, ticks of 100 ms: the next tick lets in %d, want %d", rate, d.NextTickAdmits, want)
		}
	}
}

// TestTheDocumentCountsTheCapsRoom: under a live-token cap the document's
// NextTickAdmits is at most the room the last tick left under it, so the
// page, which reads only that, tells nobody 0 at the cap.
func TestTheDocumentCountsTheCapsRoom(t *testing.T) {
	c := queue.DefaultConfig()
	for room, want := range map[int64]int64{0: 0, 3: 3, 18: 10} {
		p := queue.Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond, Capped: true, CapRoom: room}
		if d := front.New(queue.Snapshot{Pace: p}, queue.InForce{Config: c}); d.NextTickAdmits != want {
			t.Errorf("room %d under the cap: the next tick lets in %d, want %d", room, d.NextTickAdmits, want)
		}
	}
}

// TestThePageEstimatesFromTheDocumentAsTheServerDoes: the document's
// model (Document.Model) is the public lane's pace as the server's
// estimate reads it (queue.Pace.Estimate): for paces whose numbers its
// rounding leaves as they are, estimate.Of on the model is the server's
// estimate at every place, the rate held back by a cap, a lane's share and
// the rate changes ahead included. The page computes the same from the
// same numbers (waiting.js's range, held to estimate.Of by
// estimate/testdata/ranges.json).
func TestThePageEstimatesFromTheDocumentAsTheServerDoes(t *testing.T) {
	r := rand.New(rand.NewPCG(54, 1))
	pick := func(xs ...float64) float64 { return xs[r.IntN(len(xs))] }
	for i := range 300 {
		p := queue.Pace{Rate: pick(0.5, 2, 10, 37.5, 100, 250), Batch: 10 + r.IntN(90), Interval: time.Duration(pick(100, 250, 1000)) * time.Millisecond,
			Claim: pick(1, 0.95, 0.7, 0.05), Spread: pick(0.05, 0.1, 0.318, 0.437), Held: pick(0, 0, 1.5, 60), LaneShare: pick(0, 0, 0.5, 0.25)}
		for after := 0.0; r.IntN(2) == 0; {
			after += float64(1 + r.IntN(600))
			p.Ahead = append(p.Ahead, estimate.Step{After: after, Rate: pick(0, 5, 20, 400)})
		}
		d := front.New(queue.Snapshot{Pace: p}, queue.InForce{Config: queue.DefaultConfig()})
		for _, pos := range []int64{1, 2, 10, 11, 99, 1000, 54_321} {
			if got, want := estimate.Of(pos, pos, d.Model), p.Estimate(pos, pos); got != want {
				t.Fatalf("pace %d %+v, position %d: from the document %+v, the server's %+v", i, p, pos, got, want)
			}
		}
	}
}

// TestTheDocumentsModelMovesOnlyWithTheLine: a claim, a spread or a step's
// instant that moved by less than its rounding leaves the document as it
// was (its ETag too), and a lane's small share of a slow rate keeps its
// size rather than rounding to nobody let in.
func TestTheDocumentsModelMovesOnlyWithTheLine(t *testing.T) {
	c := queue.InForce{Config: queue.DefaultConfig()}
	p := queue.Pace{Rate: 100, Batch: 10, Interval: 100 * time.Millisecond, Claim: 0.81234, Spread: 0.06789,
		Ahead: []estimate.Step{{After: 59.8, Rate: 50}}}
	moved := p
	moved.Claim, moved.Spread, moved.Ahead = 0.81241, 0.06801, []estimate.Step{{After: 59.7, Rate: 50}}
	a, b := front.New(queue.Snapshot{Pace: p}, c).Model, front.New(queue.Snapshot{Pace: moved}, c).Model
	if !reflect.DeepEqual(a, b) {
		t.Errorf("a steady line's model changed: %+v, then %+v", a, b)
	}
	want := estimate.Params{Rate: 100, Claim: 0.812, Spread: 0.068, Tick: 10, Interval: 0.1, Steps: []estimate.Step{{After: 60, Rate: 50}}}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("model %+v, want %+v", a, want)
	}
	slow := front.New(queue.Snapshot{Pace: queue.Pace{Rate: 0.4, Batch: 10, Claim: 1, LaneShare: 1e-3}}, c).Model
	if slow.Rate != 0.0004 {
		t.Errorf("a lane's thousandth of 0.4/s: the document's rate is %v, want 0.0004", slow.Rate)
	}
}
