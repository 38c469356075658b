package app_test

// A draw anyone can check (issue 57), end to end on both backends: the
// commitment public before the opening (the front document, the draw
// route, the schedule), the seed in no answer, metric or log line until
// the draw, then the record published, recomputing, and placing everyone
// as it says. Needs the stores' draws (CommitDraw, SaveDraw, Draws,
// DrawRecord).

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/draw"
)

func TestADrawAnyoneCanCheck(t *testing.T) {
	for _, b := range apptest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			in := apptest.Boot(t, b, nil)
			q := apptest.UniqueID("checkable")
			// Ahead enough for the entries and every read before it on a
			// loaded machine (8 s was not, once, in CI).
			opensAt := time.Now().Add(15 * time.Second).UTC().Truncate(time.Millisecond)
			in.PutQueue(q, map[string]any{"opensAt": opensAt.Format(time.RFC3339Nano), "paused": true})
			ids := map[string]string{} // user → participant id
			var answers []string
			for i := range 5 {
				u := fmt.Sprintf("drawn-%d", i)
				r := in.Do("POST", entriesPath(q), in.As(u), nil)
				d, _ := r.Body["draw"].(map[string]any)
				id, _ := d["participant"].(string)
				salt, _ := d["salt"].(string)
				if r.Str("opensAt") == "" || id == "" || draw.ParticipantID(salt, u) != id {
					t.Fatalf("entering before the opening: %s", r.Raw)
				}
				ids[u] = id
				answers = append(answers, r.Raw)
			}
			pending := checkPendingBeforeOpening(t, in, q, opensAt)
			seed := seedOf(t, in, q, pending)
			for _, a := range append(answers, publicAnswers(in, q)...) {
				for _, form := range seedForms(t, seed) {
					if strings.Contains(a, form) {
						t.Fatalf("the seed is out before the draw (as %s): %s", form, a)
					}
				}
			}
			if time.Now().After(opensAt) {
				t.Fatal("the checks before the opening ran past it: give them more time")
			}

			rec := waitForRecord(t, in, q)
			if rec.Commitment != pending || rec.Seed != seed || len(rec.Participants) != len(ids) {
				t.Fatalf("the record: commitment %s seed %s, %d participants; want %s, the committed seed, %d", rec.Commitment, rec.Seed, len(rec.Participants), pending, len(ids))
			}
			if err := draw.Verify(rec); err != nil {
				t.Fatalf("the published record does not recompute: %v", err)
			}
			eventually(t, apptest.Patience, "the opening placed", func() bool { return in.QueueStats(q).Num("length") == float64(len(ids)) })
			for u, id := range ids {
				want := 0
				for i, o := range rec.Order {
					if o == id {
						want = i + 1
					}
				}
				if r := in.Do("GET", mePath(q), in.As(u), nil); int(r.Num("position")) != want || r.Body["draw"] != nil {
					t.Errorf("%s after the opening: %s, want position %d (the published order)", u, r.Raw, want)
				}
			}
			if r := in.Do("GET", "/api/v1/queues/"+q+"/draw?commitment="+pending, "", nil); r.Status != 200 || !strings.Contains(r.Raw, seed) {
				t.Errorf("the record by its commitment: %d %s", r.Status, r.Raw)
			}
			eventually(t, apptest.Patience, "the front document without a pending draw", func() bool {
				return in.Do("GET", "/api/v1/queues/"+q+"/front", "", nil).Body["draw"] == nil
			})
		})
	}
}

// checkPendingBeforeOpening reads the commitment from the front document
// (once the admitter made it) and holds the draw route and the schedule
// to it, all before opensAt; it answers the commitment.
func checkPendingBeforeOpening(t *testing.T, in *apptest.Instance, q string, opensAt time.Time) string {
	t.Helper()
	var pending string
	eventually(t, apptest.Patience, "the commitment in the front document", func() bool {
		d, _ := in.Do("GET", "/api/v1/queues/"+q+"/front", "", nil).Body["draw"].(map[string]any)
		pending, _ = d["commitment"].(string)
		return pending != "" && d["url"] == "/api/v1/queues/"+q+"/draw"
	})
	if time.Now().After(opensAt) {
		t.Fatal("the commitment was read after the opening: give it more time")
	}
	r := in.Do("GET", "/api/v1/queues/"+q+"/draw", "", nil)
	var got struct {
		Commitments []struct{ Commitment, State string }
		Record      *json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.Raw), &got); err != nil || r.Status != 200 || len(got.Commitments) != 1 || got.Record != nil ||
		got.Commitments[0].Commitment != pending || got.Commitments[0].State != "pending" {
		t.Fatalf("the draw route before the opening: %d %s, want the one pending commitment %s and no record", r.Status, r.Raw, pending)
	}
	if s := in.Do("GET", "/admin/v1/queues/"+q+"/schedule", in.AdminAuth(), nil); !strings.Contains(s.Raw, `"commitment":"`+pending+`"`) {
		t.Errorf("the schedule does not list the commitment: %s", s.Raw)
	}
	return pending
}

// seedOf reads commitment's seed where only the store has it.
func seedOf(t *testing.T, in *apptest.Instance, q, commitment string) string {
	t.Helper()
	all, err := in.Main.LineStoreForTest().Draws(context.Background(), q)
	if err != nil || len(all) == 0 || all[len(all)-1].Hash != commitment {
		t.Fatalf("the store's draws: %v, %v; want %s last", all, err, commitment)
	}
	return all[len(all)-1].Seed.Hex()
}

// publicAnswers is everything the instance says of the queue to anyone,
// the operator, its metrics and its log.
func publicAnswers(in *apptest.Instance, q string) []string {
	admin := in.AdminAuth()
	out := []string{in.Logs.String()}
	for _, c := range []struct{ path, auth string }{
		{"/api/v1/queues/" + q + "/front", ""},
		{"/api/v1/queues/" + q + "/draw", ""},
		{"/metrics", ""},
		{"/admin/v1/queues/" + q, admin},
		{"/admin/v1/queues/" + q + "/schedule", admin},
		{"/admin/v1/queues/" + q + "/history", admin},
		{"/admin/v1/queues/" + q + "/rollups", admin},
		{"/admin/v1/queues/" + q + "/report", admin},
		{"/admin/v1/queues", admin},
	} {
		r := in.Do("GET", c.path, c.auth, nil)
		out = append(out, r.Raw)
	}
	return out
}

// waitForRecord waits for the draw route to publish the queue's record.
func waitForRecord(t *testing.T, in *apptest.Instance, q string) draw.Record {
	t.Helper()
	var got struct{ Record *draw.Record }
	eventually(t, apptest.Patience, "the record published", func() bool {
		r := in.Do("GET", "/api/v1/queues/"+q+"/draw", "", nil)
		return json.Unmarshal([]byte(r.Raw), &got) == nil && got.Record != nil
	})
	return *got.Record
}

// seedForms are the ways a seed could be written out by mistake: its hex,
// its bytes as encoding/json writes a [32]byte (numbers), and base64.
func seedForms(t *testing.T, seedHex string) []string {
	t.Helper()
	b, err := hex.DecodeString(seedHex)
	if err != nil {
		t.Fatal(err)
	}
	nums := make([]string, len(b))
	for i, v := range b {
		nums[i] = strconv.Itoa(int(v))
	}
	return []string{seedHex, "[" + strings.Join(nums, ",") + "]", base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)}
}
