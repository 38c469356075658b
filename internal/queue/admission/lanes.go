package admission

import (
	"slices"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// Lanes (issue 53), planned here once for every store: a tick's n seats
// are split among the lanes with people waiting by their shares, with the
// credit each carries from the last tick (lane.Allot), and each lane is
// then chosen from as the line is without lanes (choose: its first n
// present, or a draw among its people). Seats a lane cannot use — too few
// present, its front all no-shows — go to the lanes that used all of
// theirs, so the tick lets in what it would have without lanes.

// laneDemands are the lanes as the tick finds them, Public first: their
// shares in force (0 for a lane no longer in force) and how many wait.
func laneDemands(c queue.InForce, in TickInput) []lane.Demand {
	out := []lane.Demand{{Name: lane.Public, Share: c.Lanes.Share(lane.Public), Waiting: in.Length}}
	for _, l := range in.Lanes {
		out = append(out, lane.Demand{Name: l.Name, Share: c.Lanes.Share(l.Name), Waiting: l.Length})
	}
	return out
}

// lanes plans the tick's n seats lane by lane.
func (p *TickPlan) lanes(in TickInput, front Front, n int, absent Absence) error {
	demands := laneDemands(in.Config, in)
	split := lane.Allot(n, demands, in.State.LaneCredit)
	fronts := []Front{front}
	for _, l := range in.Lanes {
		fronts = append(fronts, l.Front)
	}
	used := make([]int, len(demands))
	read := make([]int64, len(demands)) // waiters read from each front so far
	full := make([]bool, len(demands))  // let in all it was given: may take more
	take := func(i, k int) error {
		from := read[i]
		ahead := func(rank, n int64) ([]Waiter, error) { return fronts[i](from+rank, n) }
		var sub TickPlan
		if err := sub.choose(in.Config, ahead, k, demands[i].Waiting-from, absent); err != nil {
			return err
		}
		name := demands[i].Name
		p.Admitted = append(p.Admitted, inLane(sub.Admitted, name)...)
		p.Skipped = append(p.Skipped, inLane(sub.Skipped, name)...)
		p.addDraw(name, sub.Draw, sub.Draws, sub.Absent)
		got := len(sub.Admitted) + sub.Draw
		read[i] += int64(len(sub.Admitted) + len(sub.Skipped) + sub.Draw)
		used[i] += got
		full[i] = got == k && read[i] < demands[i].Waiting
		return nil
	}
	for i := range demands {
		if split.Seats[i] > 0 {
			if err := take(i, split.Seats[i]); err != nil {
				return err
			}
		}
	}
	for short := n - sum(used); short > 0; short-- {
		i := split.More(used, func(i int) bool { return full[i] })
		if i < 0 {
			break
		}
		if err := take(i, 1); err != nil {
			return err
		}
	}
	p.State.LaneCredit = split.Carry(used)
	return nil
}

// inLane is ws with each waiter's Lane set to name ("" for Public).
func inLane(ws []Waiter, name string) []Waiter {
	if name == lane.Public {
		return ws
	}
	for i := range ws {
		ws[i].Lane = name
	}
	return ws
}

// addDraw adds a lane's draw of n users (with draws random values) to the
// plan: the public lane's as Draw, another's in DrawLanes.
func (p *TickPlan) addDraw(name string, n, draws int, absent Absence) {
	if n == 0 {
		return
	}
	p.Draws += draws
	p.Absent = absent
	if name == lane.Public {
		p.Draw += n
		return
	}
	if p.DrawLanes == nil {
		p.DrawLanes = map[string]int{}
	}
	p.DrawLanes[name] += n
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// laneShares is the share of the rate each lane in force would get now:
// its own share over the shares of the lanes with people waiting, itself
// counted among them (a newcomer to an empty lane is told the wait its
// lane will get once they are in it). nil without lanes. A lane whose
// share is 0 while others wait gets only what they leave: it is told a
// thousandth, a wait no one should plan by. So is a lane no longer in
// force with people still in it (share 0 too), rather than no share at
// all, which an answer would read as the whole rate.
func laneShares(lanes lane.List, in TickInput) map[string]float64 {
	for _, l := range in.Lanes {
		if _, ok := lanes.Named(l.Name); !ok && l.Length > 0 {
			if len(lanes) == 0 { // no lanes in force: the public is the one lane, with the whole rate
				lanes = lane.List{{Name: lane.Public, Share: 1}}
			}
			lanes = append(slices.Clip(lanes), lane.Lane{Name: l.Name})
		}
	}
	if len(lanes) == 0 {
		return nil
	}
	waiting := map[string]bool{lane.Public: in.Length > 0}
	for _, l := range in.Lanes {
		waiting[l.Name] = l.Length > 0
	}
	total := 0.0
	for _, l := range lanes {
		if waiting[l.Name] {
			total += l.Share
		}
	}
	out := make(map[string]float64, len(lanes))
	for _, l := range lanes {
		t := total
		if !waiting[l.Name] {
			t += l.Share
		}
		share := 1.0
		if t > 0 {
			share = l.Share / t
		}
		out[l.Name] = round(max(share, 1e-3), 1e6)
	}
	return out
}
