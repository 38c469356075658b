package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queue/memstore"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/report/reporttest"
)

// fakeRollups stands in for the store's rollups: the known sale, or an
// error; it remembers the span it was asked for.
type fakeRollups struct {
	err          error
	since, until time.Time
}

func (f *fakeRollups) Sale(ctx context.Context, q string, since, until time.Time) (report.Sale, error) {
	f.since, f.until = since, until
	sale, _ := reporttest.Sale(q)
	return sale, f.err
}

// The report route renders what its source gives for the span asked,
// in the language and zone asked, and answers the source's failure from
// the error table.
func TestQueueReportRoute(t *testing.T) {
	store, line := memstore.New(nil), signals.New()
	svc, op := queue.NewService(store, 0, line), operate.New(store, line)
	if err := op.PutConfig(context.Background(), "spring-drop", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	src := &fakeRollups{}
	api := httpapi.New(httpapi.Options{Queue: svc, Operate: op, AdminToken: "t", Reports: src, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	get := func(path string) (*http.Response, string) {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Accept-Language", "ko-KR,ko;q=0.9")
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		return w.Result(), w.Body.String()
	}
	res, body := get("/admin/v1/queues/spring-drop/report?since=2026-12-04T19:00:00Z&until=2026-12-04T21:00:00Z&tz=Asia/Seoul")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" || res.Header.Get("Content-Language") != "ko" {
		t.Fatalf("%d %v: %.300s", res.StatusCode, res.Header, body)
	}
	if want := time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC); !src.since.Equal(want) || !src.until.Equal(want.Add(2*time.Hour)) {
		t.Errorf("the source was asked for %v–%v", src.since, src.until)
	}
	_, truth := reporttest.Sale("spring-drop")
	for _, want := range []string{`<html lang="ko">`, "2026-12-05 04:00부터 2026-12-05 06:00까지 (Asia/Seoul)", truth.EnteredText()} {
		if !strings.Contains(body, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy %q", csp)
	}

	src.err = queue.ErrUnavailable
	if res, body := get("/admin/v1/queues/spring-drop/report?lang=en"); res.StatusCode != 503 || !strings.Contains(body, `"unavailable"`) {
		t.Errorf("the source down: %d %s", res.StatusCode, body)
	}
}

// The route with no source of its own reads the store's rows; with no
// since, as far back as a read may reach, whatever second until is (an
// until off the minute once reached a minute too far: 400).
func TestQueueReportRouteStoreWithoutSince(t *testing.T) {
	store, line := memstore.New(nil), signals.New()
	svc, op := queue.NewService(store, 0, line), operate.New(store, line)
	if err := op.PutConfig(context.Background(), "spring-drop", queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(httpapi.Options{Queue: svc, Operate: op, AdminToken: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, until := range []string{"", "&until=2026-12-04T21:00:00Z", "&until=2026-12-04T21:00:31Z"} {
		req := httptest.NewRequest("GET", "/admin/v1/queues/spring-drop/report?lang=en"+until, nil)
		req.Header.Set("Authorization", "Bearer t")
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		if w.Code != 200 || !strings.Contains(w.Body.String(), "<h1") {
			t.Errorf("until %q: %d %.300s", until, w.Code, w.Body.String())
		}
	}
}

// The report shows each lane's time in line end to end: the store says
// each admitted user's lane (rollup.Wait.Lane), the rows count it as an
// instance writes them (rollup.Pending, rollup.Reading), and the Lanes
// section gives the members' p50 and p90, not "–", first-come and drawn.
func TestQueueReportShowsEachLanesTimeInLine(t *testing.T) {
	for _, method := range []queue.QueueingMethod{queue.MethodFIFO, queue.MethodRandom} {
		t.Run(string(method), func(t *testing.T) {
			ctx := context.Background()
			at := time.Now().Truncate(time.Millisecond) // the store's clock, moved by the test
			store, line := memstore.New(func() time.Time { return at }), signals.New()
			svc, op := queue.NewService(store, 0, line), operate.New(store, line)
			c := queue.DefaultConfig()
			c.RatePerSecond, c.BatchSize, c.Interval, c.Method = 10_000, 10, time.Millisecond, method
			c.Lanes = lane.List{{Name: "members", Claim: "tier=gold", Share: 0.3}, {Name: lane.Public, Share: 0.7}}
			if err := op.PutConfig(ctx, "drop", c); err != nil {
				t.Fatal(err)
			}
			pending := &rollup.Pending{}
			roll := func() {
				st, err := store.Stats(ctx, "drop")
				if err != nil {
					t.Fatal(err)
				}
				r := rollup.Reading{Entered: st.EnteredTotal, Admitted: st.AdmittedTotal, Length: st.Length}
				for _, l := range st.Lanes {
					r.Lanes = append(r.Lanes, rollup.LaneFigures{Name: l.Name, Share: l.Share, Length: l.Length, Admitted: l.Admitted})
				}
				if err := store.Roll(ctx, "drop", r.Write(pending.Take("drop"), time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 20 {
				for _, j := range []struct {
					user string
					lane string
				}{{fmt.Sprint("m", i), "members"}, {fmt.Sprint("p", i), ""}} {
					if _, err := store.Join(ctx, "drop", j.user, lane.Join{Lane: j.lane}); err != nil {
						t.Fatal(err)
					}
				}
			}
			roll()
			at = at.Add(20 * time.Millisecond) // a time in line to show
			for admitted := 0; admitted < 40; {
				a, err := store.Admit(ctx, "drop", queue.NewTokens(c.BatchSize))
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range a.Waited {
					pending.Admitted("drop", w)
				}
				admitted += len(a.Admitted)
				at = at.Add(max(a.NextIn, c.Interval))
			}
			roll()
			api := httpapi.New(httpapi.Options{Queue: svc, Operate: op, AdminToken: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			req := httptest.NewRequest("GET", "/admin/v1/queues/drop/report?lang=en", nil)
			req.Header.Set("Authorization", "Bearer t")
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			body := w.Body.String()
			row := regexp.MustCompile(`<th scope="row">members</th>(<td>[^<]*</td>){8}`).FindString(body)
			cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(row, `<th scope="row">members</th><td>`), "</td>"), "</td><td>")
			if w.Code != 200 || len(cells) != 8 || cells[1] != "20" || cells[4] == "–" || cells[5] == "–" || strings.Contains(body, "no lane&#39;s time in line is known") {
				t.Fatalf("%d: the members' row %q (want 20 let in, a p50 and a p90)", w.Code, cells)
			}
		})
	}
}
