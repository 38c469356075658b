package draw

import (
	"context"
	"errors"
	"time"
)

// BeaconSource is a public randomness beacon (drand's HTTP API: Drand).
type BeaconSource interface {
	// Name is the round a draw of an opening at opensAt uses, named in
	// its commitment: the first round published a full period or more
	// after opensAt.
	Name(ctx context.Context, opensAt time.Time) (Beacon, error)
	// Read is b's round with its randomness, once the beacon has
	// published it (ErrNotYet before).
	Read(ctx context.Context, b Beacon) (Beacon, error)
}

// ErrNotYet: the beacon has not published the round yet; the opening
// waits for it.
var ErrNotYet = errors.New("the beacon's round is not published yet")
