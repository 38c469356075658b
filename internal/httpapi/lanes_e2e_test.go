package httpapi_test

// Lanes and access codes through the API (issue 53): a code in the enter
// body puts its holder in its lane, once; a code never travels in a URL;
// a signed-in user's claim picks their lane; answers name the lane; the
// codes upload counts what it kept, and the stats show each lane.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/apptest"
)

// laneQueue makes a paused queue with three lanes: gold by a claim,
// invited by codes, and the public.
func laneQueue(t *testing.T, in *apptest.Instance) string {
	t.Helper()
	q := apptest.UniqueID("lanes")
	in.PutQueue(q, map[string]any{"paused": true, "lanes": []map[string]any{
		{"name": "gold", "claim": "tier=gold", "share": 0.3},
		{"name": "invited", "codes": true, "share": 0.2},
		{"name": "public", "share": 0.5},
	}})
	return q
}

// codesPath is a queue's codes upload.
func codesPath(q string) string { return "/admin/v1/queues/" + q + "/codes" }

// upload sends codes for the queue's invited lane as JSON and fails
// unless every one was added.
func upload(t *testing.T, in *apptest.Instance, q string, uses int, codes ...string) {
	t.Helper()
	r := in.Do("POST", codesPath(q), in.AdminAuth(), map[string]any{"lane": "invited", "uses": uses, "codes": codes})
	if r.Status != http.StatusOK || r.Num("added") != float64(len(codes)) {
		t.Fatalf("uploading %d codes: %d %s", len(codes), r.Status, r.Raw)
	}
}

// asGold is the Authorization of a signed-in user whose JWT holds the
// claim tier: gold (in a list, as a shop's login may write it).
func asGold(in *apptest.Instance, user string) string {
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": user, "exp": time.Now().Add(time.Hour).Unix(),
		"tier": []string{"silver", "gold"}}).SignedString([]byte(in.AuthSecret))
	if err != nil {
		panic(err)
	}
	return "Bearer " + tok
}

func TestLanesAndCodes(t *testing.T) {
	t.Parallel()
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			t.Run("a code's place", func(t *testing.T) { codePlace(t, in) })
			t.Run("codes refused", func(t *testing.T) { codesRefused(t, in) })
			t.Run("a claim's lane", func(t *testing.T) { claimLane(t, in) })
			t.Run("the upload", func(t *testing.T) { codesUpload(t, in) })
			t.Run("no lanes, no lane field", func(t *testing.T) { noLanes(t, in) })
			t.Run("a code moves an anonymous place", func(t *testing.T) { anonymousMoved(t, in) })
		})
	}
}

// codePlace: a code in the JSON body (typed loosely) puts its holder first
// in its lane, answered with the lane and no front-document ticket, while
// the public's places carry one; entering again with the used code is the
// place again, not a refusal; someone in the public lane who redeems a
// code moves to the back of the code's lane; stats count the redemptions.
func codePlace(t *testing.T, in *apptest.Instance) {
	q := laneQueue(t, in)
	first, second := accesscode.New(), accesscode.New()
	upload(t, in, q, 1, first, second)
	pub, holder, mover := freshUsers(3)[0], apptest.UniqueID("holder"), apptest.UniqueID("mover")
	if r := in.Do("POST", entriesPath(q), in.As(pub), nil); r.Str("lane") != "public" || r.Num("position") != 1 || r.Str("ticket") == "" {
		t.Errorf("a public newcomer: %s, want lane public, position 1, a ticket", r.Raw)
	}
	typed := strings.ToLower(strings.ReplaceAll(first, "-", " "))
	r := in.Do("POST", entriesPath(q), in.As(holder), map[string]string{"accessCode": typed})
	if r.Status != http.StatusOK || r.Str("lane") != "invited" || r.Num("position") != 1 || r.Num("queueLength") != 1 || r.Body["ticket"] != nil {
		t.Fatalf("entering with a code: %d %s, want WAITING in invited, first of one, no ticket", r.Status, r.Raw)
	}
	if r := in.Do("GET", mePath(q), in.As(holder), nil); r.Str("lane") != "invited" || r.Num("position") != 1 || r.Body["ticket"] != nil {
		t.Errorf("the holder's status: %s, want invited, first, no ticket", r.Raw)
	}
	if r := in.Do("POST", entriesPath(q), in.As(holder), map[string]string{"accessCode": first}); r.Status != http.StatusOK || r.Str("lane") != "invited" {
		t.Errorf("entering again with the code already redeemed: %d %s, want the place", r.Status, r.Raw)
	}
	in.Do("POST", entriesPath(q), in.As(mover), nil)
	form := apptest.Call{Method: "POST", Path: entriesPath(q), Auth: in.As(mover), Body: "accessCode=" + second,
		Headers: []string{"Content-Type", "application/x-www-form-urlencoded"}}
	if r, err := in.Send(http.DefaultClient, form); err != nil || r.Str("lane") != "invited" || r.Num("position") != 2 {
		t.Errorf("a public place redeeming a code (form post): %v %s, want invited, second", err, r.Raw)
	}
	if r := in.Do("GET", mePath(q), in.As(pub), nil); r.Num("position") != 1 || r.Num("queueLength") != 1 {
		t.Errorf("the public after the mover left it: %s, want first of one", r.Raw)
	}
	lanes := map[string]map[string]any{}
	for _, l := range in.QueueStats(q).Body["laneStats"].([]any) {
		lanes[l.(map[string]any)["name"].(string)] = l.(map[string]any)
	}
	if inv := lanes["invited"]; inv["length"] != 2.0 || inv["redeemed"] != 2.0 || inv["codesLeft"] != 0.0 || inv["share"] != 0.2 {
		t.Errorf("invited's stats: %v, want 2 waiting, 2 redeemed, none left, share 0.2", inv)
	}
	if len(lanes) != 3 || lanes["public"]["length"] != 1.0 {
		t.Errorf("laneStats: %v, want gold, invited, public (1 waiting)", lanes)
	}
}

// codesRefused: a used code is 409 code_used, a wrong or malformed one 403
// invalid_code, another queue's too; a code in the URL is 400 code_in_url
// on enter, status and the page without JavaScript, and nobody took a
// place by any of them.
func codesRefused(t *testing.T, in *apptest.Instance) {
	q, other := laneQueue(t, in), laneQueue(t, in)
	code, elsewhere := accesscode.New(), accesscode.New()
	upload(t, in, q, 1, code)
	upload(t, in, other, 1, elsewhere)
	in.Do("POST", entriesPath(q), in.As(apptest.UniqueID("first")), map[string]string{"accessCode": code})
	late := apptest.UniqueID("late")
	for _, tt := range []struct {
		name, path, method string
		body               any
		status             int
		code               string
	}{
		{"used", entriesPath(q), "POST", map[string]string{"accessCode": code}, http.StatusConflict, "code_used"},
		{"wrong", entriesPath(q), "POST", map[string]string{"accessCode": accesscode.New()}, http.StatusForbidden, "invalid_code"},
		{"malformed", entriesPath(q), "POST", map[string]string{"accessCode": "LETMEIN"}, http.StatusForbidden, "invalid_code"},
		{"another queue's", entriesPath(q), "POST", map[string]string{"accessCode": elsewhere}, http.StatusForbidden, "invalid_code"},
		{"in the enter URL", entriesPath(q) + "?accessCode=" + elsewhere, "POST", nil, http.StatusBadRequest, "code_in_url"},
		{"in the status URL", mePath(q) + "?code=" + elsewhere, "GET", nil, http.StatusBadRequest, "code_in_url"},
		{"in the page's URL", "/q/" + q + "/noscript?AccessCode=" + elsewhere, "GET", nil, http.StatusBadRequest, "code_in_url"},
		{"not JSON", entriesPath(q), "POST", `{"accessCode": 7}`, http.StatusBadRequest, "invalid_request"},
	} {
		r := in.Do(tt.method, tt.path, in.As(late), tt.body)
		if r.Status != tt.status || r.ErrorCode() != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.Status, r.Raw, tt.status, tt.code)
		}
		if strings.Contains(r.Raw, code) || strings.Contains(r.Raw, elsewhere) {
			t.Errorf("%s: the answer quotes the code: %s", tt.name, r.Raw)
		}
	}
	if r := in.Do("GET", mePath(q), in.As(late), nil); r.Str("status") != "NOT_IN_QUEUE" {
		t.Errorf("after refused codes: %s, want NOT_IN_QUEUE", r.Raw)
	}
	if r := in.Do("POST", entriesPath(other), in.As(late), map[string]string{"accessCode": elsewhere}); r.Str("lane") != "invited" {
		t.Errorf("the other queue's code, in its own queue: %s, want a place in invited (unused by the refusals)", r.Raw)
	}
}

// claimLane: a signed-in user whose JWT holds the gold claim waits in gold
// (enter and the page without JavaScript alike), an anonymous session in
// public; a place keeps its lane when entered again.
func claimLane(t *testing.T, in *apptest.Instance) {
	q := laneQueue(t, in)
	gold := apptest.UniqueID("gold")
	if r := in.Do("POST", entriesPath(q), asGold(in, gold), nil); r.Str("lane") != "gold" || r.Num("position") != 1 || r.Body["ticket"] != nil {
		t.Errorf("a gold member entering: %s, want gold, first, no ticket", r.Raw)
	}
	if r := in.Do("POST", entriesPath(q), in.As(gold), nil); r.Str("lane") != "gold" {
		t.Errorf("the member entering again without the claim: %s, want the place kept in gold", r.Raw)
	}
	if r := in.Do("POST", entriesPath(q), in.As(apptest.UniqueID("plain")), nil); r.Str("lane") != "public" {
		t.Errorf("a signed-in user without the claim: %s, want public", r.Raw)
	}
}

// codesUpload: CSV streamed with its columns in any order, counted line by
// line (duplicates in the upload and already held, a lane that takes no
// codes, uses outside 1 to MaxUses, a malformed code, a broken line), and JSON; the
// answer never quotes a code; an unknown queue is 404, a header without
// code or lane 400.
func codesUpload(t *testing.T, in *apptest.Instance) {
	q := laneQueue(t, in)
	held := accesscode.New()
	upload(t, in, q, 1, held)
	good := []string{accesscode.New(), accesscode.New(), accesscode.New()}
	csv := "lane,uses,code,expiresAt\n" +
		"invited,1," + good[0] + ",\n" + // line 2
		"invited,3," + good[1] + ",2099-01-01T00:00:00Z\n" +
		"invited,1," + good[1] + ",\n" + // 4: a duplicate in the upload
		"invited,1," + held + ",\n" + // 5: held already
		"gold,1," + accesscode.New() + ",\n" + // 6: gold takes no codes
		"invited,0," + accesscode.New() + ",\n" + // 7: no uses
		"invited,1000000001," + accesscode.New() + ",\n" + // 8: more than accesscode.MaxUses
		"invited,1,NOT-A-CODE,\n" + // 9
		"invited,1\n" + // 10: too few fields
		"invited,1," + good[2] + ",\n"
	r, err := in.Send(http.DefaultClient, apptest.Call{Method: "POST", Path: codesPath(q), Auth: in.AdminAuth(), Body: csv,
		Headers: []string{"Content-Type", "text/csv; charset=utf-8"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"queue":"` + q + `","added":3,"duplicates":2,"rejected":5,"rejectedLines":[6,7,8,9,10]}`
	if r.Status != http.StatusOK || strings.TrimSpace(r.Raw) != want {
		t.Errorf("CSV upload: %d %s, want %s", r.Status, r.Raw, want)
	}
	if r := in.Do("POST", entriesPath(q), in.As(apptest.UniqueID("csv")), map[string]string{"accessCode": good[1]}); r.Str("lane") != "invited" {
		t.Errorf("a code from the CSV: %s, want a place in invited", r.Raw)
	}
	r = in.Do("POST", codesPath(q), in.AdminAuth(), map[string]any{"lane": "invited", "codes": []string{accesscode.New(), "short", good[0]}})
	if r.Num("added") != 1 || r.Num("duplicates") != 1 || r.Num("rejected") != 1 || fmt.Sprint(r.Body["rejectedLines"]) != "[1]" {
		t.Errorf("JSON upload: %s, want 1 added, 1 duplicate, index 1 rejected", r.Raw)
	}
	r = in.Do("POST", codesPath(q), in.AdminAuth(), map[string]any{"lane": "invited", "uses": accesscode.MaxUses + 1, "codes": []string{accesscode.New()}})
	if r.Num("added") != 0 || r.Num("rejected") != 1 {
		t.Errorf("JSON upload of more than MaxUses: %s, want it rejected", r.Raw)
	}
	if r := in.Do("POST", codesPath("nosuchqueue"), in.AdminAuth(), map[string]any{"lane": "invited", "codes": good}); r.Status != http.StatusNotFound || r.ErrorCode() != "queue_not_found" {
		t.Errorf("an unknown queue: %d %s, want 404 queue_not_found", r.Status, r.Raw)
	}
	noLane := apptest.Call{Method: "POST", Path: codesPath(q), Auth: in.AdminAuth(), Body: "code\n" + accesscode.New() + "\n", Headers: []string{"Content-Type", "text/csv"}}
	if r, err := in.Send(http.DefaultClient, noLane); err != nil || r.Status != http.StatusBadRequest || r.ErrorCode() != "invalid_request" {
		t.Errorf("a CSV without a lane column: %v %d %s, want 400 invalid_request", err, r.Status, r.Raw)
	}
	if r := in.Do("POST", codesPath(q), "Bearer wrong", map[string]any{"lane": "invited", "codes": good}); r.Status != http.StatusUnauthorized {
		t.Errorf("without the admin token: %d %s", r.Status, r.Raw)
	}
}

// noLanes: a queue without lanes answers as before: no lane field, a
// ticket, laneStats empty.
func noLanes(t *testing.T, in *apptest.Instance) {
	q := apptest.UniqueID("plain")
	in.PutQueue(q, map[string]any{"paused": true})
	r := in.Do("POST", entriesPath(q), in.As(apptest.UniqueID("u")), nil)
	if _, ok := r.Body["lane"]; ok || r.Str("ticket") == "" {
		t.Errorf("entering a queue without lanes: %s, want no lane, a ticket", r.Raw)
	}
	if st := in.QueueStats(q); fmt.Sprint(st.Body["laneStats"]) != "[]" {
		t.Errorf("laneStats without lanes: %v, want []", st.Body["laneStats"])
	}
}

// anonymousMoved: in a queue that asks anonymous sessions for a solved
// challenge, a session waiting in public that posts a code (and no new
// solution: the page does not solve one for it) moves to the code's lane;
// one that holds no place is still asked for the challenge.
func anonymousMoved(t *testing.T, in *apptest.Instance) {
	q := laneQueue(t, in)
	in.PatchQueue(q, map[string]any{"entry": "challenge"})
	code := accesscode.New()
	upload(t, in, q, 1, code)
	waiting := in.SessionCookie()
	if r := in.EnterAnonymously("", q, waiting); r.Str("lane") != "public" {
		t.Fatalf("an anonymous place: %d %s", r.Status, r.Raw)
	}
	newcomer := in.Do("POST", entriesPath(q), "", map[string]string{"accessCode": code}, "Cookie", in.SessionCookie())
	if newcomer.Status != http.StatusForbidden || newcomer.ErrorCode() != "challenge_required" {
		t.Errorf("a newcomer with a code and no solution: %d %s, want 403 challenge_required", newcomer.Status, newcomer.Raw)
	}
	r := in.Do("POST", entriesPath(q), "", map[string]string{"accessCode": code}, "Cookie", waiting)
	if r.Status != http.StatusOK || r.Str("lane") != "invited" || r.Num("position") != 1 {
		t.Errorf("the waiting session posting the code: %d %s, want first in invited", r.Status, r.Raw)
	}
}
