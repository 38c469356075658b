package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestLanesShort runs the lanes section in its short mode (a tenth of the
// crowd over a tenth of the time, at the same rates) and a small codes
// upload, both on one instance, and checks what must hold whatever the
// machine's load: everyone let in, the store's counts equal to what
// people were told, no position ever rose, no answer named another lane
// than the person's (READY names one only when the store kept it); the
// upload added every code and made keys on Redis. The shares and the
// estimates are figures (bench/run.sh -sections lanes'): a few seconds
// hold too few admissions for a 5% bar.
func TestLanesShort(t *testing.T) {
	o := Options{RedisURL: testenv.RedisURL(t), DatabaseURL: testenv.DatabaseURL(t), Short: true}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	// A guard against a hang, not a speed check: ten times a quiet run's.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs := &serverLog{tee: o.Log}
	m, err := boot(ctx, o, logs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hc := httpClient()
	defer hc.CloseIdleConnections()
	c := &client{base: "http://" + m.Addr(), admin: "Bearer " + m.Config.AdminToken, poll: hc, order: hc}

	r, err := lanesRun(ctx, o, c, []byte(m.Config.AuthSecret))
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors > 0 || r.Rises > 0 || r.WrongLane > 0 || r.ReadyWrongLane > 0 || r.Answers == 0 {
		t.Errorf("%d errors (%s), %d rises in %d answers (%s), %d WAITING answers and %d READY in the wrong lane (%s)",
			r.Errors, r.ErrorSample, r.Rises, r.Answers, r.RiseSample, r.WrongLane, r.ReadyWrongLane, r.WrongLaneSample)
	}
	for _, l := range r.Lanes {
		if l.Admitted != l.People || l.StoreAdmitted != int64(l.People) {
			t.Errorf("%s: %d people, %d told READY, the store counts %d", l.Name, l.People, l.Admitted, l.StoreAdmitted)
		}
	}
	if md := lanesMarkdown(r, "stamp"); !strings.Contains(md, "| members | 0.3 |") || !strings.Contains(md, "| public | 0.7 |") {
		t.Errorf("the section lacks a lane:\n%s", md)
	}
	if n, _ := logs.Panics(); n > 0 {
		t.Errorf("the server logged %d panics", n)
	}

	rdb, err := newRedis(o.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	for _, format := range []string{"json", "csv"} {
		up, err := codesRound(ctx, c, nil, rdb, m.Config.KeyPrefix, format, 500)
		if err != nil {
			t.Fatal(err)
		}
		if up.Duplicates != 0 || up.Rejected != 0 || len(up.Keys) == 0 || up.KeyBytes <= 0 {
			t.Errorf("upload as %s: %+v", format, up)
		}
	}
}
