package admission_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/suspect"
)

// TestIdleTickIsNotStored: a tick of an empty line that changes nothing
// anyone reads is taken but not stored (an idle queue costs no write a
// tick); one that resets what AdmitNow spent, closes a measuring window
// with a new figure, or admits someone is.
func TestIdleTickIsNotStored(t *testing.T) {
	c := queue.DefaultConfig()
	now := time.UnixMilli(1_800_000_000_000)
	none := func(from, n int64) ([]admission.Waiter, error) { return nil, nil }
	tick := func(st admission.TickState, length int64, front admission.Front) admission.TickPlan {
		t.Helper()
		p, err := admission.PlanTick(admission.TickInput{Config: c.InForce(now), State: st, Now: now, Call: "call", Tokens: c.BatchSize, Length: length}, front)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A fresh queue's ticks store nothing while nobody comes.
	var idle admission.TickState
	for range 3 {
		p := tick(idle, 0, none)
		if !p.Due || p.Write || len(p.Admitted) != 0 {
			t.Fatalf("an idle queue's tick: due %v, write %v, admitted %v; want taken, not stored", p.Due, p.Write, p.Admitted)
		}
		if !p.State.Next.Equal(idle.Next) {
			t.Errorf("an unstored tick's state moved Next: %v → %v", idle.Next, p.State.Next)
		}
		now = now.Add(c.Interval)
	}

	spent := idle
	spent.Inline, spent.WinCount = 3, 3
	if p := tick(spent, 0, none); !p.Write || p.State.Inline != 0 {
		t.Errorf("after AdmitNow let 3 in: write %v, inline %d; want stored, inline back to 0", p.Write, p.State.Inline)
	}

	measured := idle
	measured.Measured, measured.WinStart = 7, now.Add(-6*time.Second) // a window of 5 s, ended
	if p := tick(measured, 0, none); !p.Write || p.State.Measured != 0 {
		t.Errorf("a window closing on nobody after 7/s: write %v, measured %v; want stored, 0", p.Write, p.State.Measured)
	}

	one := func(from, n int64) ([]admission.Waiter, error) {
		if from > 0 {
			return nil, nil
		}
		return []admission.Waiter{{User: "a", Ticket: 1}}, nil
	}
	if p := tick(idle, 1, one); !p.Write || len(p.Admitted) != 1 {
		t.Errorf("someone in line: write %v, admitted %v; want stored, a admitted", p.Write, p.Admitted)
	}
}

// TestTickRecordsTheRoomUnderTheCap: a tick under a live-token cap records
// the room it left, the cap less the tokens alive and those it let in (what
// an answer's estimate reads: queue.Pace.NextTickAdmits); without a cap it
// records none; and an empty line's tick that only finds the room moved
// (tokens expired) is not stored for it.
func TestTickRecordsTheRoomUnderTheCap(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	line := func(length int64) admission.Front {
		return func(from, n int64) ([]admission.Waiter, error) {
			var w []admission.Waiter
			for i := from; i < min(from+n, length); i++ {
				w = append(w, admission.Waiter{User: string(rune('a' + i)), Ticket: i + 1})
			}
			return w, nil
		}
	}
	for _, tc := range []struct {
		name              string
		maxActive, live   int64
		length            int64
		admitted          int
		room              int64
		capped, wantWrite bool
	}{
		{"no cap", 0, 0, 30, 10, 0, false, true},
		{"room for 3, two alive: 3 let in, none left", 5, 2, 30, 3, 0, true, true},
		{"room for 18: a batch let in, 8 left", 20, 2, 30, 10, 8, true, true},
		{"a line of 2, room for 18: 16 left", 20, 2, 2, 2, 16, true, true},
		{"an empty line: not stored for the room alone", 20, 2, 0, 0, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := queue.DefaultConfig()
			c.MaxActiveTokens = tc.maxActive
			p, err := admission.PlanTick(admission.TickInput{Config: c.InForce(now), Now: now, Call: "call", Tokens: c.BatchSize,
				Length: tc.length, Live: tc.live}, line(tc.length))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Admitted) != tc.admitted || p.Write != tc.wantWrite || p.State.Capped != tc.capped || p.State.CapRoom != tc.room {
				t.Errorf("admitted %d, write %v, capped %v, room %d; want %d, %v, %v, %d",
					len(p.Admitted), p.Write, p.State.Capped, p.State.CapRoom, tc.admitted, tc.wantWrite, tc.capped, tc.room)
			}
		})
	}
}

// TestShadowLineLetInLast: under shadowAdmits last a tick lets the shadow
// line in, in its order and within the quota, only when nobody waits in
// the line and no opening is being placed, never under never, never
// while paused, and never drawn (MethodRandom lets it in in order too).
func TestShadowLineLetInLast(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	shadow := func(from, n int64) ([]admission.Waiter, error) {
		var out []admission.Waiter
		for i := from; i < min(from+n, 5); i++ {
			out = append(out, admission.Waiter{User: string(rune('v' + i)), Ticket: i + 1})
		}
		return out, nil
	}
	person := func(from, n int64) ([]admission.Waiter, error) {
		if from > 0 {
			return nil, nil
		}
		return []admission.Waiter{{User: "a", Ticket: 1}}, nil
	}
	for _, tc := range []struct {
		name    string
		set     func(*queue.Config)
		length  int64
		placing bool
		pending bool
		want    string
	}{
		{"last, line empty", func(c *queue.Config) { c.ShadowAdmits = suspect.AdmitLast }, 0, false, false, "shadow [v w x]"},
		{"last, drawn line empty", func(c *queue.Config) { c.ShadowAdmits, c.Method = suspect.AdmitLast, queue.MethodRandom }, 0, false, false, "shadow [v w x]"},
		{"last, someone waiting", func(c *queue.Config) { c.ShadowAdmits = suspect.AdmitLast }, 1, false, false, "line [a]"},
		{"last, an opening placed", func(c *queue.Config) { c.ShadowAdmits = suspect.AdmitLast }, 0, true, false, "line []"},
		{"last, an opening ahead", func(c *queue.Config) { c.ShadowAdmits = suspect.AdmitLast }, 0, false, true, "line []"},
		{"last, paused", func(c *queue.Config) { c.ShadowAdmits, c.Paused = suspect.AdmitLast, true }, 0, false, false, "line []"},
		{"never", func(c *queue.Config) {}, 0, false, false, "line []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := queue.DefaultConfig()
			c.RatePerSecond, c.BatchSize, c.Interval = 3000, 3, time.Millisecond
			tc.set(&c)
			line := person
			if tc.length == 0 {
				line = func(from, n int64) ([]admission.Waiter, error) { return nil, nil }
			}
			p, err := admission.PlanTick(admission.TickInput{Config: c.InForce(now), Now: now, Call: "call", Tokens: c.BatchSize,
				Length: tc.length, Placing: tc.placing, Pending: tc.pending, Shadow: 5, ShadowFront: shadow}, line)
			if err != nil {
				t.Fatal(err)
			}
			var users []string
			for _, w := range p.Admitted {
				users = append(users, w.User)
			}
			got := fmt.Sprintf("line %v", users)
			if p.Shadow {
				got = fmt.Sprintf("shadow %v", users)
			}
			if got != tc.want || p.Draw != 0 && p.Shadow || p.Idle && p.Shadow {
				t.Errorf("let in %s (draw %d, idle %v), want %s", got, p.Draw, p.Idle, tc.want)
			}
		})
	}
}

// TestHiddenPageHasTheLongerBar: a judged waiter whose page last said it
// was hidden is a no-show only once unseen for AbandonAfterHidden (issue
// 55), one whose page was visible at AbandonAfter; where AbandonAfterHidden
// is set below AbandonAfter, a hidden page still has AbandonAfter.
func TestHiddenPageHasTheLongerBar(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	ago := func(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }
	front := []admission.Waiter{
		{User: "visible-20s", Ticket: 1, Seen: ago(20)},
		{User: "hidden-20s", Ticket: 2, Seen: ago(20), Hidden: true},
		{User: "hidden-40s", Ticket: 3, Seen: ago(40), Hidden: true},
		{User: "hidden-70s", Ticket: 4, Seen: ago(70), Hidden: true},
		{User: "visible-5s", Ticket: 5, Seen: ago(5)},
		{User: "never", Ticket: 6},
	}
	read := func(from, n int64) ([]admission.Waiter, error) {
		return front[min(from, int64(len(front))):min(from+n, int64(len(front)))], nil
	}
	for _, tc := range []struct {
		name           string
		abandon, hides time.Duration
		skipped        string
	}{
		{"hidden longer", 15 * time.Second, 30 * time.Second, "[visible-20s hidden-40s hidden-70s never]"},
		{"hidden set below", 60 * time.Second, 15 * time.Second, "[hidden-70s never]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := queue.DefaultConfig()
			c.RatePerSecond, c.BatchSize, c.Interval = 100, 10, 100*time.Millisecond
			c.AbandonAfter, c.AbandonAfterHidden = tc.abandon, tc.hides
			st := admission.TickState{Checkpoints: []admission.Checkpoint{{At: now.Add(-2 * time.Minute), Ticket: 100}}}
			p, err := admission.PlanTick(admission.TickInput{Config: c.InForce(now), State: st, Now: now, Call: "call", Tokens: c.BatchSize, Length: int64(len(front))}, read)
			if err != nil {
				t.Fatal(err)
			}
			var skipped []string
			for _, w := range p.Skipped {
				skipped = append(skipped, w.User)
			}
			if got := fmt.Sprint(skipped); got != tc.skipped {
				t.Errorf("skipped %s, want %s", got, tc.skipped)
			}
			if len(p.Admitted)+len(p.Skipped) != len(front) {
				t.Errorf("admitted %d and skipped %d of %d", len(p.Admitted), len(p.Skipped), len(front))
			}
		})
	}
}
