package draw_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/draw/drandtest"
)

// TestDrandNamesTheFirstRoundAtOrAfterTheOpening: round r is out at
// genesis + (r-1)*period; an opening at a round's instant takes that
// round, a millisecond later the next; /info is asked once.
func TestDrandNamesTheFirstRoundAtOrAfterTheOpening(t *testing.T) {
	chain := drandtest.New(t, time.Now().Add(-time.Hour), 3*time.Second)
	d := draw.NewDrand(chain.URL+"/", nil) // a trailing slash is the same chain
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		opensAt time.Time
		want    uint64
	}{
		// A full period after the opening: a round out when the list
		// closes is never the one.
		{"at round 11's instant", chain.TimeOf(11), 12},
		{"a millisecond after it", chain.TimeOf(11).Add(time.Millisecond), 13},
		{"a millisecond before it", chain.TimeOf(11).Add(-time.Millisecond), 12},
		{"before the genesis", chain.Genesis.Add(-time.Hour), 1},
		{"at the genesis", chain.Genesis, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := d.Name(ctx, tt.opensAt)
			if err != nil {
				t.Fatal(err)
			}
			if want := (draw.Beacon{URL: chain.URL, Round: tt.want}); b != want {
				t.Fatalf("Name(%s) = %+v, want %+v", tt.opensAt.Format(time.RFC3339Nano), b, want)
			}
		})
	}
	if asked := chain.Asked(); !slices.Equal(asked, []string{"/info"}) {
		t.Fatalf("the chain was asked %q, want /info once", asked)
	}
}

// TestDrandReadsARoundOnceItIsOut: ErrNotYet without asking while the
// chain's clock says the round is ahead; ErrNotYet while drand itself
// answers it is (425 from a relay, 404 from drand's server); then the
// round's randomness, SHA-256 of its signature.
func TestDrandReadsARoundOnceItIsOut(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	chain := drandtest.New(t, now.Add(-time.Hour), 30*time.Second)
	d := draw.NewDrand(chain.URL, nil)

	ahead, err := d.Name(ctx, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(ctx, ahead); !errors.Is(err, draw.ErrNotYet) {
		t.Fatalf("a round an hour ahead: %v, want ErrNotYet", err)
	}
	if asked := chain.Asked(); !slices.Equal(asked, []string{"/info"}) {
		t.Fatalf("asked %q: a round the chain's clock says is ahead must not be asked for", asked)
	}

	out, err := d.Name(ctx, now.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	behind := func() time.Time { return chain.TimeOf(out.Round).Add(-time.Second) }
	chain.SetClock(behind) // drand lags: the round is due but not out
	if _, err := d.Read(ctx, out); !errors.Is(err, draw.ErrNotYet) {
		t.Fatalf("425 Too Early: %v, want ErrNotYet", err)
	}
	chain.FutureNotFound()
	if _, err := d.Read(ctx, out); !errors.Is(err, draw.ErrNotYet) {
		t.Fatalf("404: %v, want ErrNotYet", err)
	}
	chain.SetClock(time.Now)
	got, err := d.Read(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (draw.Beacon{URL: chain.URL, Round: out.Round, Randomness: chain.Randomness(out.Round)}); got != want {
		t.Fatalf("Read = %+v, want %+v", got, want)
	}
}

// TestDrandRefusesWhatIsNotARound: a randomness that is not SHA-256 of the
// signature is an error, not a value to draw with; so is a chain that
// does not answer.
func TestDrandRefusesWhatIsNotARound(t *testing.T) {
	ctx := context.Background()
	chain := drandtest.New(t, time.Now().Add(-time.Hour), 3*time.Second)
	chain.WrongRandomness()
	d := draw.NewDrand(chain.URL, nil)
	if b, err := d.Read(ctx, draw.Beacon{URL: chain.URL, Round: 5}); err == nil || errors.Is(err, draw.ErrNotYet) {
		t.Fatalf("a randomness that is not the signature's hash: %+v, %v; want an error", b, err)
	}
	gone := drandtest.New(t, time.Now(), time.Second)
	gone.Close()
	if _, err := draw.NewDrand(gone.URL, nil).Name(ctx, time.Now()); err == nil {
		t.Fatal("a chain that does not answer named a round")
	}
}
