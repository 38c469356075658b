package lane_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/waitroom/waitroom/internal/queue/lane"
)

// TestAllotHoldsSharesWithinOnePerson: while every lane has people
// waiting, over any run of ticks each lane's seats are its share of the
// seats to within one person, whether a tick has one seat, two or ten.
func TestAllotHoldsSharesWithinOnePerson(t *testing.T) {
	shares := [][]float64{{0.3, 0.7}, {0.1, 0.2, 0.7}, {0.05, 0.95}, {0.5, 0.25, 0.125, 0.125}}
	for _, sh := range shares {
		for _, perTick := range []int{1, 2, 3, 10} {
			demands := make([]lane.Demand, len(sh))
			for i := range sh {
				demands[i] = lane.Demand{Name: string(rune('a' + i)), Share: sh[i], Waiting: 1 << 40}
			}
			var credit map[string]float64
			got := make([]int, len(sh))
			for tick := 1; tick <= 500; tick++ {
				s := lane.Allot(perTick, demands, credit)
				sum := 0
				for i := range sh {
					got[i] += s.Seats[i]
					sum += s.Seats[i]
				}
				if sum != perTick {
					t.Fatalf("shares %v, %d a tick: tick %d gave %d seats", sh, perTick, tick, sum)
				}
				credit = s.Carry(s.Seats)
				for i := range sh {
					if want := float64(tick*perTick) * sh[i]; math.Abs(float64(got[i])-want) > 1+1e-9 {
						t.Fatalf("shares %v, %d a tick: after %d ticks lane %d let in %d, its share is %.2f", sh, perTick, tick, i, got[i], want)
					}
				}
			}
		}
	}
}

// TestAllotGivesAnEmptyLanesShareToTheOthers: a lane with nobody waiting
// gets no seat, and the others share its part in proportion to theirs.
func TestAllotGivesAnEmptyLanesShareToTheOthers(t *testing.T) {
	demands := []lane.Demand{{Name: "gold", Share: 0.5}, {Name: "silver", Share: 0.25, Waiting: 1000}, {Name: lane.Public, Share: 0.25, Waiting: 1000}}
	var credit map[string]float64
	got := map[string]int{}
	for range 100 {
		s := lane.Allot(10, demands, credit)
		for i, d := range demands {
			got[d.Name] += s.Seats[i]
		}
		credit = s.Carry(s.Seats)
		if s.ShareOf("silver") != 0.5 || s.ShareOf("gold") != 0 {
			t.Fatalf("shares at a tick: gold %v silver %v, want 0 and 0.5", s.ShareOf("gold"), s.ShareOf("silver"))
		}
	}
	if got["gold"] != 0 || got["silver"] != 500 || got[lane.Public] != 500 {
		t.Fatalf("let in %v, want gold 0, silver 500, public 500", got)
	}
}

// TestAllotNeverSeatsMoreThanWait: a lane is given no more seats than it
// has people; the rest go to lanes that have them.
func TestAllotNeverSeatsMoreThanWait(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 53))
	for range 2000 {
		n := r.IntN(20)
		demands := make([]lane.Demand, 1+r.IntN(lane.MaxLanes))
		waiting := int64(0)
		for i := range demands {
			demands[i] = lane.Demand{Name: string(rune('a' + i)), Share: r.Float64(), Waiting: int64(r.IntN(6))}
			waiting += demands[i].Waiting
		}
		s := lane.Allot(n, demands, map[string]float64{"a": r.Float64()*2 - 1})
		sum := 0
		for i, d := range demands {
			if int64(s.Seats[i]) > d.Waiting {
				t.Fatalf("lane %s: %d seats, %d waiting", d.Name, s.Seats[i], d.Waiting)
			}
			sum += s.Seats[i]
		}
		if int64(sum) != min(int64(n), waiting) {
			t.Fatalf("%d seats for %d waiting, n %d", sum, waiting, n)
		}
	}
}

func TestValidate(t *testing.T) {
	good := lane.List{{Name: "members", Claim: "tier=gold", Share: 0.3}, {Name: lane.Public, Share: 0.7}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []lane.List{
		{{Name: "members", Claim: "tier=gold", Share: 1}},                                                           // no public
		{{Name: "members", Claim: "tier=gold", Share: 0.3}, {Name: lane.Public, Share: 0.6}},                        // sum
		{{Name: "members", Share: 0.3}, {Name: lane.Public, Share: 0.7}},                                            // no way in
		{{Name: "Members", Codes: true, Share: 0.3}, {Name: lane.Public, Share: 0.7}},                               // name
		{{Name: "members", Claim: "tier", Share: 0.3}, {Name: lane.Public, Share: 0.7}},                             // claim
		{{Name: lane.Public, Codes: true, Share: 1}},                                                                // public by code
		{{Name: "m", Codes: true, Share: 0.5}, {Name: "m", Codes: true, Share: 0}, {Name: lane.Public, Share: 0.5}}, // twice
	}
	for i, l := range bad {
		if l.Validate() == nil {
			t.Errorf("case %d: %v validated", i, l)
		}
	}
}

func TestByClaims(t *testing.T) {
	l := lane.List{{Name: "gold", Claim: "tier=gold", Share: 0.2}, {Name: "staff", Claim: "groups=staff", Share: 0.1}, {Name: lane.Public, Share: 0.7}}
	claims := map[string]any{"tier": "silver", "groups": []any{"x", "staff"}}
	if got := l.ByClaims(func(n string) any { return claims[n] }); got != "staff" {
		t.Fatalf("lane %q, want staff", got)
	}
	if got := l.ByClaims(nil); got != lane.Public {
		t.Fatalf("anonymous: lane %q, want public", got)
	}
}
