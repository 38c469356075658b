package httpapi_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/queue"
)

func TestEnterAndBecomeReady(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			in := apptest.Boot(t, b, nil)
			r := in.Do("POST", "/api/v1/queues/default/entries", in.As("alice"), nil)
			if r.Status != 200 || (r.Str("status") != "WAITING" && r.Str("status") != "READY") {
				t.Fatalf("enter: %d %s", r.Status, r.Raw)
			}
			tok := in.WaitReady("default", "alice")
			if len(tok) < 22 {
				t.Fatalf("token %q is shorter than 128 bits of base64", tok)
			}
		})
	}
}

// ---------------------------------------------------------------- helpers

// asEach is one call of method and path per auth header, for FireAll.
func asEach(method, path string, auths []string) []apptest.Call {
	calls := make([]apptest.Call, len(auths))
	for i, a := range auths {
		calls[i] = apptest.Call{Method: method, Path: path, Auth: a}
	}
	return calls
}

func entriesPath(q string) string { return "/api/v1/queues/" + q + "/entries" }
func mePath(q string) string      { return "/api/v1/queues/" + q + "/entries/me" }

func sortedFields(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkExactFields fails unless the body has exactly these fields.
func checkExactFields(t *testing.T, r apptest.Response, want ...string) {
	t.Helper()
	slices.Sort(want)
	if d := cmp.Diff(want, sortedFields(r.Body)); d != "" {
		t.Errorf("fields of %s (-want +got):\n%s", r.Raw, d)
	}
}

// isNullField reports whether field is present and null.
func isNullField(r apptest.Response, field string) bool {
	v, ok := r.Body[field]
	return ok && v == nil
}

// waitShape is what the wait estimate needs to know about a queue: its
// rate, and what its next tick surely lets in (rate × interval rounded
// down, at most a batch: 10 at the default 100/s, 100 ms, batches of 10);
// and whether the answer is of a paused line, or of a stalled one
// (admission running, nobody let in for estimate.StallAfter), whose wait
// is not known, for that reason.
type waitShape struct {
	rate            float64
	tick            int64
	paused, stalled bool
}

// wantEstimate is the contract: ceil(position/rate), 0 within what the
// next tick surely lets in (issue 49: not within a batch, which at 1/s
// and 100 ms ticks told the first ten 0 when the tenth waited 10 s).
func (s waitShape) wantEstimate(pos int64) int64 {
	if pos <= s.tick {
		return 0
	}
	return int64(math.Ceil(float64(pos) / s.rate))
}

// contractPollBand is the contract's poll interval for an estimate, before jitter.
func contractPollBand(est int64) int64 {
	switch {
	case est >= 60:
		return 10
	case est >= 10:
		return 5
	}
	return 2
}

// checkPollJitter accepts the band's interval jittered by up to ±20% (rounded to
// whole seconds, as the contract's type is).
func checkPollJitter(t *testing.T, got, band int64) {
	t.Helper()
	lo, hi := int64(math.Round(0.8*float64(band))), int64(math.Round(1.2*float64(band)))
	if got < lo || got > hi {
		t.Errorf("pollAfterSeconds %d outside %d±20%% [%d, %d]", got, band, lo, hi)
	}
}

// checkWaiting checks a WAITING answer against the contract and returns
// the position.
func checkWaiting(t *testing.T, r apptest.Response, s waitShape) int64 {
	t.Helper()
	if r.Status != 200 || r.Str("status") != "WAITING" {
		t.Fatalf("want 200 WAITING, got %d %s", r.Status, r.Raw)
	}
	// ticket: the signed place-holder the page reads the front document by.
	// waitTimeKnown (issue 54): with the range while admission runs, with
	// the reason (paused, stalled) while it does not.
	want := []string{"status", "position", "queueLength", "estimatedWaitSeconds", "pollAfterSeconds", "ticket", "waitTimeKnown"}
	switch {
	case s.paused:
		want = append(want, "paused", "waitTimeUnknownReason")
		if r.Body["paused"] != true || r.Body["waitTimeKnown"] != false || r.Str("waitTimeUnknownReason") != "paused" {
			t.Errorf("paused = %v, waitTimeKnown %v for %q while paused", r.Body["paused"], r.Body["waitTimeKnown"], r.Str("waitTimeUnknownReason"))
		}
	case s.stalled:
		want = append(want, "stalled", "waitTimeUnknownReason")
		if r.Body["stalled"] != true || r.Body["waitTimeKnown"] != false || r.Str("waitTimeUnknownReason") != "stalled" {
			t.Errorf("stalled = %v, waitTimeKnown %v for %q while stalled", r.Body["stalled"], r.Body["waitTimeKnown"], r.Str("waitTimeUnknownReason"))
		}
	default:
		want = append(want, "estimatedWaitRange")
	}
	checkExactFields(t, r, want...)
	pos, length := int64(r.Num("position")), int64(r.Num("queueLength"))
	if pos < 1 || pos > length {
		t.Errorf("position %d outside 1..queueLength %d", pos, length)
	}
	est := int64(r.Num("estimatedWaitSeconds"))
	if w := s.wantEstimate(pos); est != w {
		t.Errorf("position %d at %g/s, %d a tick: estimatedWaitSeconds %d, want %d", pos, s.rate, s.tick, est, w)
	}
	if rg, ok := r.Body["estimatedWaitRange"].(map[string]any); !s.paused && !s.stalled && (!ok || r.Body["waitTimeKnown"] != true || !(rg["low"].(float64) <= float64(est) && float64(est) <= rg["high"].(float64))) {
		t.Errorf("waitTimeKnown %v, range %v: want known, around estimatedWaitSeconds %d", r.Body["waitTimeKnown"], r.Body["estimatedWaitRange"], est)
	}
	checkPollJitter(t, int64(r.Num("pollAfterSeconds")), contractPollBand(est))
	return pos
}

// checkReady checks a READY answer's shape and returns token and expiry.
func checkReady(t *testing.T, r apptest.Response) (string, time.Time) {
	t.Helper()
	if r.Status != 200 || r.Str("status") != "READY" {
		t.Fatalf("want 200 READY, got %d %s", r.Status, r.Raw)
	}
	checkExactFields(t, r, "status", "token", "expiresAt", "pollAfterSeconds")
	if !isNullField(r, "pollAfterSeconds") {
		t.Errorf("READY pollAfterSeconds = %v, want null", r.Body["pollAfterSeconds"])
	}
	exp, err := time.Parse(time.RFC3339Nano, r.Str("expiresAt"))
	if err != nil {
		t.Errorf("expiresAt %q: %v", r.Str("expiresAt"), err)
	}
	if len(r.Str("token")) < 22 {
		t.Errorf("token %q is shorter than 128 bits of base64", r.Str("token"))
	}
	return r.Str("token"), exp
}

func checkNotInQueue(t *testing.T, r apptest.Response) {
	t.Helper()
	if r.Status != 200 || r.Str("status") != "NOT_IN_QUEUE" {
		t.Fatalf("want 200 NOT_IN_QUEUE, got %d %s", r.Status, r.Raw)
	}
	checkExactFields(t, r, "status", "pollAfterSeconds")
	if !isNullField(r, "pollAfterSeconds") {
		t.Errorf("NOT_IN_QUEUE pollAfterSeconds = %v, want null", r.Body["pollAfterSeconds"])
	}
}

// checkErrorAnswer checks the one error shape, its status and its code.
func checkErrorAnswer(t *testing.T, r apptest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.ErrorCode() != code {
		t.Fatalf("want %d %s, got %d %s", status, code, r.Status, r.Raw)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
	checkExactFields(t, r, "error")
	e, _ := r.Body["error"].(map[string]any)
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("error without a message: %s", r.Raw)
	}
}

// ---------------------------------------------------------------- the line

func TestQueueContract(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			t.Run("crowd", func(t *testing.T) { t.Parallel(); testCrowd(t, in.ReportingTo(t)) })
			t.Run("capacity", func(t *testing.T) { t.Parallel(); testCapacity(t, in.ReportingTo(t)) })
			t.Run("unknown queue", func(t *testing.T) { t.Parallel(); testUnknownQueue(t, in.ReportingTo(t)) })
			t.Run("admission in line order", func(t *testing.T) { t.Parallel(); testAdmissionOrder(t, in.ReportingTo(t)) })
			t.Run("leave closes the gap", func(t *testing.T) { t.Parallel(); testLeave(t, in.ReportingTo(t)) })
			t.Run("session cookie", func(t *testing.T) { t.Parallel(); testSessionCookie(t, in.ReportingTo(t)) })
			t.Run("user id limits", func(t *testing.T) { t.Parallel(); testUserIDLimits(t, in.ReportingTo(t)) })
			t.Run("admin stats", func(t *testing.T) { t.Parallel(); testAdminStats(t, in.ReportingTo(t)) })
			t.Run("admin config validation", func(t *testing.T) { t.Parallel(); testAdminValidation(t, in.ReportingTo(t)) })
			t.Run("admin auth", func(t *testing.T) { t.Parallel(); testAdminAuth(t, in.ReportingTo(t)) })
			t.Run("probes", func(t *testing.T) { t.Parallel(); testProbes(t, in.ReportingTo(t)) })
		})
	}
}

// testCrowd: 1000 users enter a paused queue at once; each gets its own
// place 1..1000, keeps it on re-entry, and is told the estimate and poll
// interval the contract derives from that place.
func testCrowd(t *testing.T, in *apptest.Instance) {
	const n = 1000
	q := "crowd"
	shape := waitShape{rate: 1, tick: 0, paused: true} // 0.1 a tick
	in.PutQueue(q, map[string]any{"paused": true, "ratePerSecond": 1, "batchSize": 10, "intervalMs": 100})

	auths := make([]string, n)
	for i := range auths {
		auths[i] = in.As(fmt.Sprintf("crowd-%04d", i))
	}
	userAt := make([]int, n+1) // position → index into auths
	for i, r := range in.FireAll(asEach("POST", entriesPath(q), auths)) {
		pos := checkWaiting(t, r, shape)
		if pos < 1 || pos > n || userAt[pos] != 0 {
			t.Fatalf("user %d got position %d, out of range or taken", i, pos)
		}
		userAt[pos] = i + 1
		// Nobody leaves, so a newcomer is last: position = length then.
		if l := int64(r.Num("queueLength")); l != pos {
			t.Errorf("newcomer at %d was told queueLength %d", pos, l)
		}
	}
	for pos := 1; pos <= n; pos++ {
		if userAt[pos] == 0 {
			t.Fatalf("position %d was given to nobody", pos)
		}
		userAt[pos]-- // back to a 0-based index
	}
	posOf := make([]int64, n)
	for pos := 1; pos <= n; pos++ {
		posOf[userAt[pos]] = int64(pos)
	}

	// Each subtest fails itself, not this test (reportingTo).
	t.Run("re-entry keeps the place", func(t *testing.T) {
		for i, r := range in.ReportingTo(t).FireAll(asEach("POST", entriesPath(q), auths)) {
			if pos := checkWaiting(t, r, shape); pos != posOf[i] {
				t.Errorf("user %d re-entered at %d, had %d", i, pos, posOf[i])
			}
			if l := int64(r.Num("queueLength")); l != n {
				t.Errorf("queueLength %d, want %d", l, n)
			}
		}
	})
	t.Run("status", func(t *testing.T) {
		for i, r := range in.ReportingTo(t).FireAll(asEach("GET", mePath(q), auths)) {
			if pos := checkWaiting(t, r, shape); pos != posOf[i] {
				t.Errorf("user %d status at %d, had %d", i, pos, posOf[i])
			}
			if l := int64(r.Num("queueLength")); l != n {
				t.Errorf("queueLength %d, want %d", l, n)
			}
		}
	})

	// The estimate and the poll bands follow the rate (estimate, not
	// position, picks the band), so a rate change moves them; and so does
	// what the next 100 ms tick lets in, 0 at 1/s and 0.5/s, 1 at 10/s.
	bands := []struct {
		rate                   float64
		pos, wantEst, wantPoll int64
	}{
		{1, 1, 1, 2}, {1, 5, 5, 2}, {1, 9, 9, 2}, {1, 10, 10, 5}, {1, 11, 11, 5}, {1, 30, 30, 5}, {1, 59, 59, 5},
		{1, 60, 60, 10}, {1, 100, 100, 10}, {1, 1000, 1000, 10},
		{10, 1, 0, 2}, {10, 2, 1, 2}, {10, 5, 1, 2}, {10, 30, 3, 2}, {10, 99, 10, 5}, {10, 100, 10, 5}, {10, 591, 60, 10}, {10, 1000, 100, 10},
		{0.5, 1, 2, 2}, {0.5, 11, 22, 5}, {0.5, 29, 58, 5}, {0.5, 30, 60, 10},
	}
	for _, rate := range []float64{1, 10, 0.5} {
		t.Run(fmt.Sprintf("bands at %g per s", rate), func(t *testing.T) {
			in := in.ReportingTo(t)
			in.PatchQueue(q, map[string]any{"ratePerSecond": rate})
			shape := waitShape{rate: rate, tick: int64(rate / 10), paused: true} // ticks of 100 ms
			for _, c := range bands {
				if c.rate != rate {
					continue
				}
				t.Run(fmt.Sprintf("position %d", c.pos), func(t *testing.T) {
					r := in.ReportingTo(t).Do("GET", mePath(q), auths[userAt[c.pos]], nil)
					if pos := checkWaiting(t, r, shape); pos != c.pos {
						t.Fatalf("position %d, want %d", pos, c.pos)
					}
					if est := int64(r.Num("estimatedWaitSeconds")); est != c.wantEst {
						t.Errorf("estimatedWaitSeconds %d, want %d", est, c.wantEst)
					}
					checkPollJitter(t, int64(r.Num("pollAfterSeconds")), c.wantPoll)
				})
			}
		})
	}

	st := in.QueueStats(q)
	if st.Num("length") != n || st.Num("admittedTotal") != 0 || st.Body["paused"] != true {
		t.Errorf("stats after the crowd: %s", st.Raw)
	}
}

// testCapacity: a full line answers 429 queue_full with Retry-After to
// newcomers, while members can still re-enter.
func testCapacity(t *testing.T, in *apptest.Instance) {
	q := "small"
	shape := waitShape{rate: 100, tick: 10, paused: true}
	in.PutQueue(q, map[string]any{"paused": true, "capacity": 3})
	for i := 1; i <= 3; i++ {
		r := in.Do("POST", entriesPath(q), in.As(fmt.Sprintf("cap-%d", i)), nil)
		if pos := checkWaiting(t, r, shape); pos != int64(i) {
			t.Fatalf("cap-%d at %d", i, pos)
		}
	}
	r := in.Do("POST", entriesPath(q), in.As("cap-4"), nil)
	checkErrorAnswer(t, r, http.StatusTooManyRequests, "queue_full")
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After %q, want whole seconds ≥ 1", r.Header.Get("Retry-After"))
	}
	if pos := checkWaiting(t, in.Do("POST", entriesPath(q), in.As("cap-2"), nil), shape); pos != 2 {
		t.Errorf("a member re-entering a full line got %d, want 2", pos)
	}
	checkNotInQueue(t, in.Do("GET", mePath(q), in.As("cap-4"), nil))
	// A place freed is a place taken.
	if r := in.Do("DELETE", mePath(q), in.As("cap-1"), nil); r.Status != http.StatusNoContent {
		t.Fatalf("leave: %d %s", r.Status, r.Raw)
	}
	if pos := checkWaiting(t, in.Do("POST", entriesPath(q), in.As("cap-4"), nil), shape); pos != 3 {
		t.Errorf("cap-4 after a place freed: %d, want 3", pos)
	}
	checkErrorAnswer(t, in.Do("POST", entriesPath(q), in.As("cap-5"), nil), http.StatusTooManyRequests, "queue_full")
	if st := in.QueueStats(q); st.Num("length") != 3 {
		t.Errorf("length %v, want 3", st.Body["length"])
	}
}

func testUnknownQueue(t *testing.T, in *apptest.Instance) {
	for _, c := range []struct {
		name, method, path, auth string
		body                     any
	}{
		{"enter", "POST", entriesPath("nosuchqueue"), in.As("u"), nil},
		{"status", "GET", mePath("nosuchqueue"), in.As("u"), nil},
		{"admin stats", "GET", "/admin/v1/queues/nosuchqueue", in.AdminAuth(), nil},
		{"admin patch", "PATCH", "/admin/v1/queues/nosuchqueue", in.AdminAuth(), map[string]any{"paused": false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkErrorAnswer(t, in.ReportingTo(t).Do(c.method, c.path, c.auth, c.body), http.StatusNotFound, "queue_not_found")
		})
	}
	// Leaving a line you are not in (of any queue) has the outcome asked for.
	if r := in.Do("DELETE", mePath("nosuchqueue"), in.As("u"), nil); r.Status != http.StatusNoContent {
		t.Errorf("leave an unknown queue: %d %s", r.Status, r.Raw)
	}
	// Still unknown: none of the above created it.
	checkErrorAnswer(t, in.Do("GET", "/admin/v1/queues/nosuchqueue", in.AdminAuth(), nil), http.StatusNotFound, "queue_not_found")
}

// testAdmissionOrder: unpausing lets users in one by one in line order,
// each with a token that lives tokenTtlSeconds; READY is sticky.
func testAdmissionOrder(t *testing.T, in *apptest.Instance) {
	const n, ttl = 6, 120
	q := "inorder"
	in.PutQueue(q, map[string]any{"paused": true, "ratePerSecond": 10, "batchSize": 1, "intervalMs": 100, "tokenTtlSeconds": ttl})
	users := make([]string, n)
	for i := range users {
		users[i] = in.As(fmt.Sprintf("ord-%d", i))
		if pos := checkWaiting(t, in.Do("POST", entriesPath(q), users[i], nil), waitShape{rate: 10, tick: 1, paused: true}); pos != int64(i+1) {
			t.Fatalf("ord-%d at %d", i, pos)
		}
	}
	// Paused: nobody gets in, even after the admitter has seen the queue.
	time.Sleep(1200 * time.Millisecond)
	checkWaiting(t, in.Do("GET", mePath(q), users[0], nil), waitShape{rate: 10, tick: 1, paused: true})

	unpaused := time.Now()
	if st := in.PatchQueue(q, map[string]any{"paused": false}); st.Body["paused"] != false {
		t.Fatalf("unpause: %s", st.Raw)
	}
	// Poll from the back of the line to the front: whoever is READY at
	// some moment had everyone before them admitted earlier, so each sweep
	// must see a prefix of the line READY.
	deadline := time.Now().Add(apptest.Patience)
	stalledAnswers := 0
	for {
		ready := make([]bool, n)
		for i := n - 1; i >= 0; i-- {
			r := in.Do("GET", mePath(q), users[i], nil)
			switch r.Str("status") {
			case "READY":
				ready[i] = true
			case "WAITING":
				// Admission runs: the wait is known, with its range; or,
				// where the admitter was held up for StallAfter (2 s here)
				// by a loaded machine, the line says it is stalled and the
				// wait not known, which is the contract's answer to a stall
				// and checked as such (the sweeps go on; the line moves on).
				stalled := r.Body["stalled"] == true || r.Str("waitTimeUnknownReason") == "stalled"
				if stalled {
					stalledAnswers++
				}
				checkWaiting(t, r, waitShape{rate: 10, tick: 1, stalled: stalled})
			default:
				t.Fatalf("ord-%d: %d %s", i, r.Status, r.Raw)
			}
		}
		k := 0
		for k < n && ready[k] {
			k++
		}
		if slices.Contains(ready[k:], true) {
			t.Fatalf("admitted out of line order: READY = %v", ready)
		}
		if k == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d admitted in time", k, n)
		}
		time.Sleep(30 * time.Millisecond)
	}
	if stalledAnswers > 0 {
		t.Logf("%d WAITING answers while admitting said the line stalled (the machine held the admitter up)", stalledAnswers)
	}

	now := time.Now()
	tokens := map[string]bool{}
	var prev time.Time
	for i, u := range users {
		tok, exp := checkReady(t, in.Do("GET", mePath(q), u, nil))
		if tokens[tok] {
			t.Errorf("ord-%d got a token already handed out", i)
		}
		tokens[tok] = true
		// Admitted between the unpause and now, however long that took:
		// expiresAt is the admission plus the TTL (2 s for the clocks'
		// rounding).
		if exp.Before(unpaused.Add((ttl-2)*time.Second)) || exp.After(now.Add((ttl+2)*time.Second)) {
			t.Errorf("ord-%d: expiresAt %v, want %ds after its admission, between the unpause (%v) and now (%v)", i, exp, ttl, unpaused, now)
		}
		// Admitted one per tick in line order: the expiries follow the line.
		// (Never earlier; equal when a late tick was made up in the same
		// millisecond as the next.)
		if exp.Before(prev) {
			t.Errorf("ord-%d expires at %v, before the one ahead of it (%v)", i, exp, prev)
		}
		prev = exp

		// Entering again while READY keeps the same token.
		tok2, exp2 := checkReady(t, in.Do("POST", entriesPath(q), u, nil))
		if tok2 != tok || !exp2.Equal(exp) {
			t.Errorf("ord-%d re-entered READY with %q %v, had %q %v", i, tok2, exp2, tok, exp)
		}
	}
	// Pausing stops admission, not the tokens already out: READY keeps its
	// shape, and so does NOT_IN_QUEUE below.
	in.PatchQueue(q, map[string]any{"paused": true})
	if tok, _ := checkReady(t, in.Do("GET", mePath(q), users[n-1], nil)); !tokens[tok] {
		t.Errorf("READY while paused with an unknown token")
	}
	st := in.QueueStats(q)
	if st.Num("admittedTotal") != n || st.Num("activeTokens") != n || st.Num("length") != 0 {
		t.Errorf("stats after admitting everyone: %s", st.Raw)
	}
	// Giving back an unused token.
	if r := in.Do("DELETE", mePath(q), users[0], nil); r.Status != http.StatusNoContent || r.Raw != "" {
		t.Fatalf("give back a token: %d %q", r.Status, r.Raw)
	}
	checkNotInQueue(t, in.Do("GET", mePath(q), users[0], nil))
	if st := in.QueueStats(q); st.Num("activeTokens") != n-1 {
		t.Errorf("activeTokens %v after a token was given back, want %d", st.Body["activeTokens"], n-1)
	}
}

// testLeave: leaving closes the gap for everyone behind; coming back means
// the end of the line.
func testLeave(t *testing.T, in *apptest.Instance) {
	q := "gap"
	shape := waitShape{rate: 100, tick: 10, paused: true}
	in.PutQueue(q, map[string]any{"paused": true})
	names := []string{"gap-a", "gap-b", "gap-c", "gap-d"}
	for i, u := range names {
		if pos := checkWaiting(t, in.Do("POST", entriesPath(q), in.As(u), nil), shape); pos != int64(i+1) {
			t.Fatalf("%s at %d", u, pos)
		}
	}
	r := in.Do("DELETE", mePath(q), in.As("gap-b"), nil)
	if r.Status != http.StatusNoContent || r.Raw != "" {
		t.Fatalf("leave: %d %q", r.Status, r.Raw)
	}
	for _, c := range []struct {
		user      string
		pos, size int64
	}{{"gap-a", 1, 3}, {"gap-c", 2, 3}, {"gap-d", 3, 3}} {
		r := in.Do("GET", mePath(q), in.As(c.user), nil)
		if pos := checkWaiting(t, r, shape); pos != c.pos || int64(r.Num("queueLength")) != c.size {
			t.Errorf("%s: %s, want position %d of %d", c.user, r.Raw, c.pos, c.size)
		}
	}
	checkNotInQueue(t, in.Do("GET", mePath(q), in.As("gap-b"), nil))
	if r := in.Do("DELETE", mePath(q), in.As("gap-b"), nil); r.Status != http.StatusNoContent {
		t.Errorf("leaving twice: %d %s", r.Status, r.Raw)
	}
	if pos := checkWaiting(t, in.Do("POST", entriesPath(q), in.As("gap-b"), nil), shape); pos != 4 {
		t.Errorf("gap-b came back at %d, want the end (4)", pos)
	}
	if pos := checkWaiting(t, in.Do("POST", entriesPath(q), in.As("gap-a"), nil), shape); pos != 1 {
		t.Errorf("gap-a re-entered at %d, want 1", pos)
	}
}

// testSessionCookie: the page hands out a signed anonymous session that
// the API accepts as identity.
func testSessionCookie(t *testing.T, in *apptest.Instance) {
	q := "cookies"
	in.PutQueue(q, map[string]any{"paused": true})
	page := in.Do("GET", "/", "", nil)
	if page.Status != 200 {
		t.Fatalf("GET /: %d", page.Status)
	}
	set := page.Header.Values("Set-Cookie")
	if len(set) != 1 {
		t.Fatalf("GET / set cookies %q, want one", set)
	}
	c, err := http.ParseSetCookie(set[0])
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "wr_session" || c.Value == "" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		t.Fatalf("session cookie %q: want wr_session, HttpOnly, SameSite=Lax, Path=/", set[0])
	}
	cookie := c.Name + "=" + c.Value
	shape := waitShape{rate: 100, tick: 10, paused: true}
	if pos := checkWaiting(t, in.EnterAnonymously("", q, cookie), shape); pos != 1 {
		t.Errorf("entered with the cookie at %d", pos)
	}
	// Entering again keeps the place, with no new challenge to solve.
	if pos := checkWaiting(t, in.Do("POST", entriesPath(q), "", nil, "Cookie", cookie), shape); pos != 1 {
		t.Errorf("entered again with the cookie at %d", pos)
	}
	if pos := checkWaiting(t, in.Do("GET", mePath(q), "", nil, "Cookie", cookie), shape); pos != 1 {
		t.Errorf("status with the cookie at %d", pos)
	}
	// A second visitor is someone else.
	other := in.Do("GET", "/q/"+q, "", nil)
	c2, err := http.ParseSetCookie(other.Header.Get("Set-Cookie"))
	if err != nil || c2.Value == c.Value {
		t.Fatalf("second visitor's cookie %q (err %v)", other.Header.Get("Set-Cookie"), err)
	}
	if pos := checkWaiting(t, in.EnterAnonymously("", q, c2.Name+"="+c2.Value), shape); pos != 2 {
		t.Errorf("second visitor at %d, want 2", pos)
	}
	// A visitor who has a session keeps it.
	if again := in.Do("GET", "/", "", nil, "Cookie", cookie); again.Header.Get("Set-Cookie") != "" {
		t.Errorf("a visitor with a session got a new cookie: %q", again.Header.Get("Set-Cookie"))
	}
	if r := in.Do("DELETE", mePath(q), "", nil, "Cookie", cookie); r.Status != http.StatusNoContent {
		t.Errorf("leave with the cookie: %d %s", r.Status, r.Raw)
	}
	checkErrorAnswer(t, in.Do("GET", mePath(q), "", nil), http.StatusUnauthorized, "unauthenticated")
}

// testUserIDLimits: the longest and the oddest ids the contract allows work.
func testUserIDLimits(t *testing.T, in *apptest.Instance) {
	q := "ids"
	in.PutQueue(q, map[string]any{"paused": true})
	for _, id := range []string{
		"x", strings.Repeat("u", 128), `a.b-c_d@e|f~!#$%^&*()+=[]<>?/\'"` + "`:;,", "user:1", "42",
	} {
		t.Run(id, func(t *testing.T) {
			in := in.ReportingTo(t)
			r := in.Do("POST", entriesPath(q), in.As(id), nil)
			pos := checkWaiting(t, r, waitShape{rate: 100, tick: 10, paused: true})
			if p := checkWaiting(t, in.Do("GET", mePath(q), in.As(id), nil), waitShape{rate: 100, tick: 10, paused: true}); p != pos {
				t.Errorf("status at %d, entered at %d", p, pos)
			}
		})
	}
}

func testAdminStats(t *testing.T, in *apptest.Instance) {
	st := in.QueueStats("default")
	// Every setting of the table, and the numbers.
	fields := []string{"queue", "length", "admittedTotal", "activeTokens", "consumedTotal", "measuredRatePerSecond",
		"effectiveRatePerSecond", "effectiveRateReason", "abandonedTotal", "preQueueLength", "unitsLeft", "soldOut", "phaseInForce",
		"shadowLength", "shadowEnteredTotal", "shadowAdmittedTotal", "shadowLeftTotal", "clearedTotal", "laneStats"}
	for _, s := range queue.Settings {
		fields = append(fields, s.Name)
	}
	checkExactFields(t, st, fields...)
	want := map[string]any{
		"queue": "default", "ratePerSecond": 100.0, "batchSize": 10.0, "intervalMs": 100.0, "capacity": 100000.0,
		"tokenTtlSeconds": 300.0, "maxActiveTokens": 0.0, "paused": false, "entry": "challenge", "challengeCost": float64(apptest.LeastChallengeCost),
		"length": 0.0, "admittedTotal": 0.0, "activeTokens": 0.0,
		"adaptive": false, "minRatePerSecond": 1.0, "maxRatePerSecond": 100.0, "targetLatencyMs": 250.0,
		"abandonAfterSeconds": 0.0, "opensAt": nil, "message": "", "effectiveRatePerSecond": 100.0, "effectiveRateReason": "",
		"abandonedTotal": 0.0, "preQueueLength": 0.0,
		"consumedTotal": 0.0, "shadowLength": 0.0, "shadowEnteredTotal": 0.0, "shadowAdmittedTotal": 0.0, "shadowLeftTotal": 0.0, "clearedTotal": 0.0,
		// The rate comes from the bottleneck, and says how.
		"rateDerivation": "40 conns × 0.5 × 1000/200 ms = 100/s",
	}
	for k, v := range want {
		if st.Body[k] != v {
			t.Errorf("%s = %#v, want %#v", k, st.Body[k], v)
		}
	}
	if m, ok := st.Body["measuredRatePerSecond"].(float64); !ok || m < 0 {
		t.Errorf("measuredRatePerSecond = %#v", st.Body["measuredRatePerSecond"])
	}

	list := in.Do("GET", "/admin/v1/queues", in.AdminAuth(), nil)
	if list.Status != 200 {
		t.Fatalf("list: %d %s", list.Status, list.Raw)
	}
	qs, _ := list.Body["queues"].([]any)
	found := false
	for _, q := range qs {
		if m, _ := q.(map[string]any); m["queue"] == "default" {
			found = true
		}
	}
	if !found {
		t.Errorf("default missing from %s", list.Raw)
	}
}

// testAdminValidation: a config that cannot work is 400 invalid_config and
// changes nothing; a good change is applied and shown.
func testAdminValidation(t *testing.T, in *apptest.Instance) {
	q := "cfg"
	before := in.PutQueue(q, map[string]any{})
	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"min above max", map[string]any{"minRatePerSecond": 50, "maxRatePerSecond": 5}},
		{"negative target latency", map[string]any{"targetLatencyMs": -1}},
		{"zero target latency", map[string]any{"targetLatencyMs": 0}},
		{"abandon after 1 s", map[string]any{"abandonAfterSeconds": 1}},
		{"abandon after 14 s", map[string]any{"abandonAfterSeconds": 14}},
		{"negative abandon", map[string]any{"abandonAfterSeconds": -15}},
		{"malformed opensAt", map[string]any{"opensAt": "tomorrow"}},
		{"opensAt without a zone", map[string]any{"opensAt": "2026-12-24T20:00:00"}},
		{"opensAt on the 13th month", map[string]any{"opensAt": "2026-13-01T00:00:00Z"}},
		{"adaptive ceiling over batch", map[string]any{"adaptive": true, "maxRatePerSecond": 500}},
		{"negative rate", map[string]any{"ratePerSecond": -1}},
		{"zero rate", map[string]any{"ratePerSecond": 0}},
		{"absurd rate", map[string]any{"ratePerSecond": 1e7, "batchSize": 10000, "intervalMs": 1}},
		{"zero batch", map[string]any{"batchSize": 0}},
		{"negative batch", map[string]any{"batchSize": -5}},
		{"huge batch", map[string]any{"batchSize": 10001}},
		{"zero interval", map[string]any{"intervalMs": 0}},
		{"interval over a minute", map[string]any{"intervalMs": 60001}},
		{"overflowing interval", map[string]any{"intervalMs": int64(math.MaxInt64)}},
		{"zero capacity", map[string]any{"capacity": 0}},
		{"zero token ttl", map[string]any{"tokenTtlSeconds": 0}},
		{"token ttl over a day", map[string]any{"tokenTtlSeconds": 86401}},
		{"negative token cap", map[string]any{"maxActiveTokens": -1}},
		{"overflowing token ttl", map[string]any{"tokenTtlSeconds": int64(math.MinInt64)}},
		{"rate×interval over batch", map[string]any{"ratePerSecond": 1000, "batchSize": 10, "intervalMs": 100}},
		{"longer interval over batch", map[string]any{"intervalMs": 1000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := in.ReportingTo(t)
			for _, method := range []string{"PATCH", "PUT"} {
				r := in.Do(method, "/admin/v1/queues/"+q, in.AdminAuth(), c.body)
				checkErrorAnswer(t, r, http.StatusBadRequest, "invalid_config")
				// The answer names the field at fault.
				named := false
				for field := range c.body {
					e, _ := r.Body["error"].(map[string]any)
					msg, _ := e["message"].(string)
					named = named || strings.Contains(msg, field)
				}
				if !named {
					t.Errorf("%s %v: the message names none of the fields: %s", method, c.body, r.Raw)
				}
			}
		})
	}
	if d := cmp.Diff(before.Body, in.QueueStats(q).Body); d != "" {
		t.Errorf("refused configs changed the queue (-before +after):\n%s", d)
	}
	after := in.PatchQueue(q, map[string]any{"ratePerSecond": 200, "batchSize": 20})
	if after.Num("ratePerSecond") != 200 || after.Num("batchSize") != 20 || after.Str("rateDerivation") != "set by admin" ||
		after.Num("intervalMs") != 100 || after.Num("capacity") != 100000 || after.Num("tokenTtlSeconds") != 300 {
		t.Errorf("PATCH answered %s", after.Raw)
	}
	if d := cmp.Diff(after.Body, in.QueueStats(q).Body); d != "" {
		t.Errorf("GET differs from the PATCH answer:\n%s", d)
	}
	// PUT means exactly this: the fields left out go back to the defaults.
	if put := in.PutQueue(q, map[string]any{"capacity": 5}); put.Num("ratePerSecond") != 100 || put.Num("capacity") != 5 {
		t.Errorf("PUT answered %s", put.Raw)
	}
}

func testAdminAuth(t *testing.T, in *apptest.Instance) {
	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/admin/v1/queues", nil},
		{"GET", "/admin/v1/queues/default", nil},
		{"PUT", "/admin/v1/queues/authq", map[string]any{}},
		{"PATCH", "/admin/v1/queues/default", map[string]any{"paused": true}},
		{"PUT", "/admin/v1/products/authp", map[string]any{"name": "x", "stock": 1}},
	}
	auths := []struct{ name, value string }{
		{"none", ""},
		{"wrong token", "Bearer wrong"},
		{"token with extra", in.AdminAuth() + "x"},
		{"token prefix", in.AdminAuth()[:len(in.AdminAuth())-1]},
		{"token without scheme", in.AdminToken},
		{"basic", "Basic " + in.AdminToken},
		{"user JWT", in.As("admin")},
	}
	for _, rt := range routes {
		for _, a := range auths {
			t.Run(rt.method+" "+rt.path+" "+a.name, func(t *testing.T) {
				checkErrorAnswer(t, in.ReportingTo(t).Do(rt.method, rt.path, a.value, rt.body), http.StatusUnauthorized, "admin_unauthorized")
			})
		}
	}
	checkErrorAnswer(t, in.Do("GET", "/admin/v1/queues/authq", in.AdminAuth(), nil), http.StatusNotFound, "queue_not_found")
	if st := in.QueueStats("default"); st.Body["paused"] != false {
		t.Errorf("an unauthorized PATCH paused the default queue")
	}
	if r := in.Do("GET", "/api/v1/products/authp", "", nil); r.Status != http.StatusNotFound {
		t.Errorf("an unauthorized PUT created a product: %d %s", r.Status, r.Raw)
	}
}

func testProbes(t *testing.T, in *apptest.Instance) {
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		r := in.Do("GET", path, "", nil)
		if r.Status != 200 || r.Str("status") != want {
			t.Errorf("%s: %d %s", path, r.Status, r.Raw)
		}
	}
}

// TestClosedQueueSaysWhy: a newcomer to a queue that takes nobody new
// (queueingMethod reject, or closesAt passed) is refused 403 queue_closed,
// in the operator's words when the queue has a message (for the reader's
// language), in ours when it has none; whoever already holds a place is
// answered where they stand.
func TestClosedQueueSaysWhy(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			in.PutQueue("closed-words", map[string]any{"entry": "any", "paused": true,
				"message": map[string]any{"en": "Sold out: thank you!", "ko": "매진되었습니다."}})
			if r := in.Do("POST", entriesPath("closed-words"), in.As("early"), nil); r.Status != http.StatusOK {
				t.Fatalf("entering before the close: %d %s", r.Status, r.Raw)
			}
			in.PatchQueue("closed-words", map[string]any{"queueingMethod": "reject"})
			for _, c := range []struct{ lang, want string }{{"en", "Sold out: thank you!"}, {"ko-KR", "매진되었습니다."}} {
				r := in.Do("POST", entriesPath("closed-words"), in.As("late"), nil, "Accept-Language", c.lang)
				e, _ := r.Body["error"].(map[string]any)
				if r.Status != http.StatusForbidden || r.ErrorCode() != "queue_closed" || e["message"] != c.want {
					t.Errorf("a newcomer (%s) after the close: %d %s, want 403 queue_closed saying %q", c.lang, r.Status, r.Raw, c.want)
				}
			}
			if r := in.Do("POST", entriesPath("closed-words"), in.As("early"), nil); r.Status != http.StatusOK || r.Str("status") != "WAITING" {
				t.Errorf("whoever was in line, entering again after the close: %d %s", r.Status, r.Raw)
			}
			in.PutQueue("closed-plain", map[string]any{"entry": "any", "closesAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
			r := in.Do("POST", entriesPath("closed-plain"), in.As("late"), nil)
			e, _ := r.Body["error"].(map[string]any)
			if msg, _ := e["message"].(string); r.Status != http.StatusForbidden || r.ErrorCode() != "queue_closed" || msg == "" {
				t.Errorf("a newcomer to a closed queue with no message: %d %s, want 403 queue_closed with our words", r.Status, r.Raw)
			}
		})
	}
}
