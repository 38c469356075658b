package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testenv"
)

// TestReadyShort runs the ready section in its short mode (three instance
// processes on one Redis, 1,000 signed users over 10 s at 100/s) and
// checks what must hold whatever the machine's load: everyone let in, an
// entry.ready for each of them at the receiver (none missing), none for
// anyone else nor a second id for anyone, every signature good, the
// instances' published count equal to the ids taken (each event published
// once, by one instance). The lag is the long run's figure (bench/run.sh
// -sections ready).
func TestReadyShort(t *testing.T) {
	o := Options{RedisURL: testenv.RedisURL(t), DatabaseURL: testenv.DatabaseURL(t), Short: true}
	if testing.Verbose() {
		o.Log = os.Stderr
	}
	// A guard against a hang, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := runReady(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Pass || r.Admitted != r.Users || r.Unique != r.Users || r.Published != float64(r.Unique) {
		t.Errorf("%d users, %d told READY, %d errors (%s); %d ids taken (%d POSTs), %d missing (%s), %d strangers, %d refused; %v published %v",
			r.Users, r.Admitted, r.Errors, r.ErrorSample, r.Unique, r.Received, r.Missing, r.MissingSample, r.Strangers, r.Refused, r.Published, r.ByInstance)
	}
	md := readyMarkdown(r, "stamp")
	t.Log(md)
	if !strings.Contains(md, "| **0** |") {
		t.Errorf("the section shows no missing count of 0:\n%s", md)
	}
}
