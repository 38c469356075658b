package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestHiddenPageIsNoNoShow (issue 55): under abandonAfterSeconds 15 and
// abandonAfterSecondsHidden 40, in a paused line of gone, hidden1, hidden2
// and visible, where gone stops polling, hidden1 and hidden2 send the
// beacon {"hidden": true} and stop polling, and visible polls on. Once
// everyone is judged (a checkpoint every 7.5 s, judged 15 s after it:
// 22.5 s after entering at the latest, more by a late tick), admission
// resumes with room for one live token: gone is skipped, though hidden1,
// unheard of for as long, is let in. With that token holding the room,
// hidden2 waits unexamined until its beacon is over 40 s old; the token
// given back, hidden2 is skipped and visible let in. Each check reads the admin's
// figures, not the users' status, which would mark them seen.
func TestHiddenPageIsNoNoShow(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			in.PutQueue("hide", map[string]any{"paused": true, "abandonAfterSeconds": 15, "abandonAfterSecondsHidden": 40,
				"maxActiveTokens": 1, "tokenTtlSeconds": 600})
			for _, u := range []string{"gone", "hidden1", "hidden2", "visible"} {
				if r := in.Do("POST", entriesPath("hide"), in.As(u), nil); r.Status != 200 || r.Str("status") != "WAITING" {
					t.Fatalf("%s entering: %d %s", u, r.Status, r.Raw)
				}
			}
			entered := time.Now()
			for _, u := range []string{"hidden1", "hidden2"} {
				if r := in.Do("POST", mePath("hide")+"/presence", in.As(u), `{"hidden":true}`, "Content-Type", "text/plain;charset=UTF-8"); r.Status != http.StatusNoContent {
					t.Fatalf("%s's beacon: %d %s", u, r.Status, r.Raw)
				}
			}
			// visible polls as its page would (every second here) until the
			// condition holds; it is never skipped (let in only at the end).
			pollUntil := func(what string, within time.Duration, cond func() bool) {
				t.Helper()
				for deadline := time.Now().Add(within); !cond(); time.Sleep(time.Second) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: not within %v (stats %s)", what, within, in.QueueStats("hide").Raw)
					}
					if r := in.Do("GET", mePath("hide"), in.As("visible"), nil); r.Status != 200 || r.Str("status") == "NOT_IN_QUEUE" {
						t.Fatalf("visible polling: %d %s, want WAITING (or READY once let in)", r.Status, r.Raw)
					}
				}
			}
			// Judged 22.5 s after entering at the latest, plus however late
			// the tick that took the checkpoint came: the second of slack
			// this had is what a loaded machine's late tick takes (gone,
			// not yet judged at the resume, would be let in, not skipped).
			// Four seconds; abandonAfterSecondsHidden is 40 so that hidden1,
			// let in after them, is still well short of it.
			judged := 22500*time.Millisecond + 4*time.Second
			pollUntil("everyone judged", time.Minute, func() bool { return time.Since(entered) >= judged })
			in.PatchQueue("hide", map[string]any{"paused": false})
			pollUntil("gone skipped, hidden1 let in", 5*time.Second, func() bool {
				st := in.QueueStats("hide")
				return st.Num("abandonedTotal") == 1 && st.Num("admittedTotal") == 1
			})
			if since := time.Since(entered); since >= 40*time.Second {
				t.Fatalf("hidden1 let in %v after its beacon: too late to show it was kept past 15 s but before 40 s", since)
			}
			if r := in.Do("GET", mePath("hide"), in.As("hidden1"), nil); r.Str("status") != "READY" {
				t.Fatalf("hidden1: %s, want READY (a hidden page is no no-show at 15 s)", r.Raw)
			}
			if r := in.Do("GET", mePath("hide"), in.As("gone"), nil); r.Str("status") != "NOT_IN_QUEUE" {
				t.Fatalf("gone: %s, want NOT_IN_QUEUE (skipped as a no-show)", r.Raw)
			}
			// The beacon's mark is stamped when the instance sends it, up to
			// a flush (a second) after it was said, later on a busy machine:
			// waited for 1 s past the hidden limit, a late flush left it under
			// the limit and hidden2 was let in. Five seconds past 40 cover a
			// slow flush.
			pollUntil("hidden2's beacon 40 s old", time.Minute, func() bool { return time.Since(entered) >= 45*time.Second })
			if st := in.QueueStats("hide"); st.Num("length") != 2 || st.Num("abandonedTotal") != 1 {
				t.Fatalf("at 45 s, before the room opens: %s; want hidden2 and visible waiting, one skipped", st.Raw)
			}
			if r := in.Do("DELETE", mePath("hide"), in.As("hidden1"), nil); r.Status != http.StatusNoContent {
				t.Fatalf("hidden1 giving its token back: %d %s", r.Status, r.Raw)
			}
			pollUntil("hidden2 skipped, visible let in", 5*time.Second, func() bool {
				st := in.QueueStats("hide")
				return st.Num("abandonedTotal") == 2 && st.Num("length") == 0
			})
			if r := in.Do("GET", mePath("hide"), in.As("hidden2"), nil); r.Str("status") != "NOT_IN_QUEUE" {
				t.Fatalf("hidden2: %s, want NOT_IN_QUEUE (skipped past abandonAfterSecondsHidden)", r.Raw)
			}
			if r := in.Do("GET", mePath("hide"), in.As("visible"), nil); r.Str("status") != "READY" {
				t.Fatalf("visible: %s, want READY", r.Raw)
			}
		})
	}
}
