package fairness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/waitroom/waitroom/internal/queue/lane"
)

// lanesSpec is a queue with a members lane (m… users) and the public.
func lanesSpec(members ...string) *Spec {
	s := &Spec{Queue: "q", Capacity: 100, Lanes: lane.List{{Name: "members", Claim: "tier=member", Share: 0.7}, {Name: lane.Public, Share: 0.3}},
		Members: map[string]string{}}
	for _, m := range members {
		s.Members[m] = "members"
	}
	return s
}

func waiting(pos, length int64, ln string) Output {
	return Output{State: Waiting, Position: pos, Length: length, Lane: ln}
}

// The model with lanes: first come first served and positions that never
// go up within each lane, any order across lanes.
func TestModelLanes(t *testing.T) {
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		name string
		ops  func(s *Spec) []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"a member let in ahead of the public who came first", func(s *Spec) []porcupine.Operation {
			return []porcupine.Operation{
				call(s, Enter, "p1", ms(0), ms(1), waiting(1, 1, "public")),
				call(s, Enter, "m1", ms(2), ms(3), waiting(1, 1, "members")),
				call(s, Enter, "p2", ms(4), ms(5), waiting(2, 2, "public")),
				call(s, Status, "m1", ms(6), ms(7), Output{State: Ready, Token: "tm1", Lane: "members"}),
				call(s, Status, "p2", ms(8), ms(9), waiting(2, 2, "public")),
			}
		}, porcupine.Ok},
		{"the second of a lane let in while its first waits", func(s *Spec) []porcupine.Operation {
			return []porcupine.Operation{
				call(s, Enter, "m1", ms(0), ms(1), waiting(1, 1, "members")),
				call(s, Enter, "m2", ms(2), ms(3), waiting(2, 2, "members")),
				call(s, Status, "m2", ms(4), ms(5), Output{State: Ready, Token: "tm2", Lane: "members"}),
				call(s, Status, "m1", ms(6), ms(7), waiting(1, 1, "members")),
			}
		}, porcupine.Illegal},
		{"a member's join raises a public position", func(s *Spec) []porcupine.Operation {
			return []porcupine.Operation{
				call(s, Enter, "p1", ms(0), ms(1), waiting(1, 1, "public")),
				call(s, Enter, "m1", ms(2), ms(3), waiting(1, 1, "members")),
				call(s, Status, "p1", ms(4), ms(5), waiting(2, 2, "public")),
			}
		}, porcupine.Illegal},
		{"positions counted across lanes", func(s *Spec) []porcupine.Operation {
			return []porcupine.Operation{
				call(s, Enter, "p1", ms(0), ms(1), waiting(1, 1, "public")),
				call(s, Enter, "m1", ms(2), ms(3), waiting(2, 2, "members")),
			}
		}, porcupine.Illegal},
		{"a member answered in the public lane", func(s *Spec) []porcupine.Operation {
			return []porcupine.Operation{call(s, Enter, "m1", ms(0), ms(1), waiting(1, 1, "public"))}
		}, porcupine.Illegal},
		{"leaving one lane moves the rest of it up", func(s *Spec) []porcupine.Operation {
			return []porcupine.Operation{
				call(s, Enter, "m1", ms(0), ms(1), waiting(1, 1, "members")),
				call(s, Enter, "m2", ms(2), ms(3), waiting(2, 2, "members")),
				call(s, Enter, "p1", ms(4), ms(5), waiting(1, 1, "public")),
				call(s, Leave, "m1", ms(6), ms(7), Output{}),
				call(s, Status, "m2", ms(8), ms(9), waiting(1, 1, "members")),
				call(s, Status, "p1", ms(10), ms(11), waiting(1, 1, "public")),
			}
		}, porcupine.Ok},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Check(&History{Ops: c.ops(lanesSpec("m1", "m2"))}, 0, time.Minute, t.TempDir(), "lanes")
			if v.Result != c.want {
				t.Fatalf("check says %s %v; want %s", v.Result, v.Violations, c.want)
			}
		})
	}
}

// The model with lanes and an opening: each user is placed in their lane,
// and while the opening is placed a newcomer counts their lane's part of
// the pre-queue ahead.
func TestModelLanesOpening(t *testing.T) {
	s := lanesSpec("m1", "m2")
	s.Opening = true
	ops := []porcupine.Operation{
		call(s, Enter, "m1", 0, 1, Output{State: PreQueued}),
		call(s, Enter, "p1", 2, 3, Output{State: PreQueued}),
		call(s, Enter, "m2", 10, 11, waiting(2, 2, "members")), // after the opening closed, m1 still to place
		call(s, Status, "p1", 12, 13, waiting(1, 1, "public")),
		call(s, Status, "m1", 14, 15, waiting(1, 2, "members")),
	}
	if v := Check(&History{Ops: ops}, 0, time.Minute, t.TempDir(), "lanes-opening"); !v.OK() {
		t.Fatalf("check says %s %v; want it allowed", v.Result, v.Violations)
	}
}

// The shares beside the model: while both lanes certainly have people
// waiting, a lane let in beyond its share of the admissions (and two) is
// refused; without the other lane waiting, it is not.
func TestSharesHeld(t *testing.T) {
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	// m0 and p0 wait throughout [1 ms, 10 s]; the others come and are let
	// in, one each 100 ms.
	history := func(s *Spec, members, public int, contended bool) *History {
		h := &History{Specs: []*Spec{s}}
		stay := func(user string, at int) {
			h.Ops = append(h.Ops,
				call(s, Enter, user, ms(at), ms(at+1), waiting(2, 2, s.laneOf(user))),
				call(s, Status, user, ms(at+50), ms(at+51), Output{State: Ready, Token: "t" + user}))
		}
		h.Ops = append(h.Ops, call(s, Enter, "m0", 0, ms(1), waiting(1, 1, "members")),
			call(s, Status, "m0", ms(10_000), ms(10_001), waiting(1, 1, "members")))
		if contended {
			h.Ops = append(h.Ops, call(s, Enter, "p0", 0, ms(1), waiting(1, 1, "public")),
				call(s, Status, "p0", ms(10_000), ms(10_001), waiting(1, 1, "public")))
		}
		for i := range members {
			user := fmt.Sprintf("m%d", i+1)
			s.Members[user] = "members"
			stay(user, 100+200*i)
		}
		for i := range public {
			stay(fmt.Sprintf("p%d", i+1), 200+200*i)
		}
		return h
	}
	for _, c := range []struct {
		name              string
		members, public   int
		contended, wantOK bool
	}{
		{"by the shares", 7, 3, true, true},
		{"the public over its share", 3, 7, true, false},
		{"the public over its share while members wait for nobody", 3, 7, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			checked, got := sharesHeld(history(lanesSpec("m0"), c.members, c.public, c.contended), 0)
			if (len(got) == 0) != c.wantOK {
				t.Fatalf("sharesHeld says %q; want ok %v", got, c.wantOK)
			}
			if want := c.members + c.public; c.contended && checked != want {
				t.Errorf("checked %d admissions; want %d", checked, want)
			}
			if !c.wantOK && !strings.Contains(got[0], "lane public was let in 7 of at most 12") {
				t.Errorf("sharesHeld says %q", got[0])
			}
		})
	}
}
