package admission_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// fakeLane is a lane's line for PlanTick: waiters in ticket order, each
// let in (or skipped) leaving it, as the store's atomic step would.
type fakeLane struct {
	name    string
	waiters []admission.Waiter
}

func (l *fakeLane) front(from, n int64) ([]admission.Waiter, error) {
	if from >= int64(len(l.waiters)) {
		return nil, nil
	}
	return l.waiters[from:min(from+n, int64(len(l.waiters)))], nil
}

func (l *fakeLane) pop(w admission.Waiter) bool {
	for i, x := range l.waiters {
		if x.User == w.User {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// TestTicksSplitByShares: with a members lane (0.3) and the public (0.7),
// ticks of one or two seats let each lane in its share to within one
// person; each admitted waiter is named with their lane and taken from
// it; and once the members' lane is empty the public gets every seat.
func TestTicksSplitByShares(t *testing.T) {
	for _, rate := range []float64{10, 20, 100} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			c := queue.DefaultConfig()
			c.RatePerSecond = rate
			c.Lanes = lane.List{{Name: "members", Codes: true, Share: 0.3}, {Name: lane.Public, Share: 0.7}}
			now := time.UnixMilli(1_800_000_000_000)
			public, members := &fakeLane{name: lane.Public}, &fakeLane{name: "members"}
			ticket := int64(0)
			for range 2000 {
				ticket++
				if ticket%5 == 0 {
					members.waiters = append(members.waiters, admission.Waiter{User: fmt.Sprint("m", ticket), Ticket: ticket})
				} else {
					public.waiters = append(public.waiters, admission.Waiter{User: fmt.Sprint("p", ticket), Ticket: ticket})
				}
			}
			var st admission.TickState
			got := map[string]int{}
			perTick := int(rate * c.Interval.Seconds())
			for tick := 1; len(members.waiters) > 0; tick++ {
				in := admission.TickInput{Config: c.InForce(now), State: st, Now: now, Tokens: c.BatchSize, Length: int64(len(public.waiters)),
					Lanes: []admission.LaneInput{{Name: "members", Length: int64(len(members.waiters)), Front: members.front}}}
				p, err := admission.PlanTick(in, public.front)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Admitted) != perTick {
					t.Fatalf("tick %d let in %d, want %d", tick, len(p.Admitted), perTick)
				}
				for _, w := range p.Admitted {
					l := public
					if w.Lane == "members" {
						l = members
					}
					if !l.pop(w) {
						t.Fatalf("tick %d let in %s from lane %q, who is not in it", tick, w.User, w.Lane)
					}
					got[l.name]++
				}
				if want := float64(tick*perTick) * 0.3; len(members.waiters) > 0 && math.Abs(float64(got["members"])-want) > 1 {
					t.Fatalf("after %d ticks the members let in %d, their share is %.1f", tick, got["members"], want)
				}
				if s := p.State.LaneShares; s["members"] != 0.3 || s[lane.Public] != 0.7 {
					t.Fatalf("tick %d: shares told %v, want members 0.3, public 0.7", tick, s)
				}
				st, now = p.State, now.Add(c.Interval)
			}
			in := admission.TickInput{Config: c.InForce(now), State: st, Now: now, Tokens: c.BatchSize, Length: int64(len(public.waiters)),
				Lanes: []admission.LaneInput{{Name: "members", Front: members.front}}}
			p, err := admission.PlanTick(in, public.front)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Admitted) != perTick || p.State.LaneShares[lane.Public] != 1 || p.State.LaneShares["members"] != 0.3 {
				t.Fatalf("members' lane empty: %d let in (want %d), shares told %v (want public 1, and 0.3 for a member arriving)", len(p.Admitted), perTick, p.State.LaneShares)
			}
		})
	}
}

// TestASeatALaneCannotUseGoesToAnother: a lane whose front is all
// no-shows lets nobody in, and the seats it was given go to the public.
func TestASeatALaneCannotUseGoesToAnother(t *testing.T) {
	c := queue.DefaultConfig()
	c.AbandonAfter = time.Minute
	c.Lanes = lane.List{{Name: "members", Codes: true, Share: 0.5}, {Name: lane.Public, Share: 0.5}}
	now := time.UnixMilli(1_800_000_000_000)
	public, members := &fakeLane{}, &fakeLane{}
	for i := int64(1); i <= 40; i++ {
		public.waiters = append(public.waiters, admission.Waiter{User: fmt.Sprint("p", i), Ticket: 2 * i, Seen: now})
		members.waiters = append(members.waiters, admission.Waiter{User: fmt.Sprint("m", i), Ticket: 2*i - 1}) // never seen
	}
	st := admission.TickState{Checkpoints: []admission.Checkpoint{{At: now.Add(-2 * time.Minute), Ticket: 1000}}}
	in := admission.TickInput{Config: c.InForce(now), State: st, Now: now, Tokens: c.BatchSize, Length: 40,
		Lanes: []admission.LaneInput{{Name: "members", Length: 40, Front: members.front}}}
	p, err := admission.PlanTick(in, public.front)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Admitted) != 10 {
		t.Fatalf("let in %d, want the tick's 10", len(p.Admitted))
	}
	for _, w := range p.Admitted {
		if w.Lane != "" {
			t.Fatalf("let in %s of lane %q, whose people are all no-shows", w.User, w.Lane)
		}
	}
	if len(p.Skipped) == 0 || p.Skipped[0].Lane != "members" {
		t.Fatalf("skipped %v, want the members' no-shows", p.Skipped)
	}
}

// TestLanesDrawWithinThemselves: under the draw, each lane's seats are a
// draw among its own people.
func TestLanesDrawWithinThemselves(t *testing.T) {
	c := queue.DefaultConfig()
	c.Method = queue.MethodRandom
	c.Lanes = lane.List{{Name: "members", Codes: true, Share: 0.3}, {Name: lane.Public, Share: 0.7}}
	now := time.UnixMilli(1_800_000_000_000)
	none := func(from, n int64) ([]admission.Waiter, error) { return nil, nil }
	in := admission.TickInput{Config: c.InForce(now), Now: now, Tokens: c.BatchSize, Length: 100,
		Lanes: []admission.LaneInput{{Name: "members", Length: 100, Front: none}}}
	p, err := admission.PlanTick(in, none)
	if err != nil {
		t.Fatal(err)
	}
	if p.Draw != 7 || p.DrawLanes["members"] != 3 || p.Draws != 10 {
		t.Fatalf("draw %d public, %v lanes, %d values; want 7, members 3, 10", p.Draw, p.DrawLanes, p.Draws)
	}
}
