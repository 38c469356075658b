package draw

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// State is where a commitment stands.
type State string

const (
	// Pending: its opening is ahead; the seed is secret.
	Pending State = "pending"
	// Withdrawn: the opening moved, or the queue was made again, before
	// it came; a new commitment replaced it. Its seed stays secret and no
	// draw used it: a re-roll shows as a withdrawn commitment.
	Withdrawn State = "withdrawn"
	// Drawn: its opening came and its record is published.
	Drawn State = "drawn"
)

// Committed is one commitment as a queue's ledger keeps it: every one ever
// made stays listed (the store keeps the ledger apart from the queue, so
// deleting the queue keeps it too).
type Committed struct {
	// Hash is the commitment (Commitment) published at once.
	Hash    string    `json:"commitment"`
	Queue   string    `json:"queue"`
	OpensAt time.Time `json:"opensAt"`
	Beacon  *Beacon   `json:"beacon,omitempty"`
	// Seed is secret until State is Drawn (see Seed: it never prints).
	Seed Seed `json:"-"`
	// MadeAt is when the store took it, by its clock; WithdrawnAt when a
	// newer one replaced it.
	MadeAt      time.Time `json:"madeAt"`
	WithdrawnAt time.Time `json:"withdrawnAt,omitzero"`
	State       State     `json:"state"`
	// Epoch is the queue's life it was made in (queue.Snapshot.Epoch): a
	// queue made again is a new life and gets a new commitment.
	Epoch int64 `json:"-"`
}

// NewCommitted is a fresh commitment, with a new seed (NewSeed), to
// queue's opening at opensAt (the store sets MadeAt, State and Epoch).
func NewCommitted(queue string, opensAt time.Time, beacon *Beacon) Committed {
	return NewCommittedWith(NewSeed(), queue, opensAt, beacon)
}

// NewCommittedWith is NewCommitted with the seed given: for tests that
// must repeat, and test vectors.
func NewCommittedWith(seed Seed, queue string, opensAt time.Time, beacon *Beacon) Committed {
	return Committed{
		Hash: Commitment(seed, queue, opensAt, beacon), Queue: queue, OpensAt: opensAt.Truncate(time.Millisecond),
		Beacon: beacon, Seed: seed, State: Pending,
	}
}

// Record is a drawn opening as published: everything needed to recompute
// the order and the tickets, and nothing that names a person. Its JSON is
// the frozen encoding's (version 1): what `waitroom verify-draw` and
// examples/verify-draw read.
type Record struct {
	Version    int    `json:"version"`
	Queue      string `json:"queue"`
	Commitment string `json:"commitment"`
	// OpensAtMs is the opening's instant in Unix ms, as the commitment
	// hashes it; OpensAt the same, for people.
	OpensAtMs int64     `json:"opensAtMs"`
	OpensAt   time.Time `json:"opensAt"`
	Seed      string    `json:"seed"`
	Beacon    *Beacon   `json:"beacon,omitempty"`
	// Participants are the ids of everyone in the pre-queue when the list
	// was closed, ascending; ParticipantsHash closes them.
	Participants     []string `json:"participants"`
	ParticipantsHash string   `json:"participantsHash"`
	FinalSeed        string   `json:"finalSeed"`
	// Order is the participants as drawn, and Tickets the ticket each was
	// given, FirstTicket onwards (the tickets reserved when the pre-queue
	// closed): Order[i] holds FirstTicket + i. A participant who left
	// before being placed leaves their ticket unused.
	Order       []string  `json:"order"`
	FirstTicket int64     `json:"firstTicket"`
	Tickets     []int64   `json:"tickets"`
	DrawnAt     time.Time `json:"drawnAt"`
}

// Draw makes c's record: the participants' ids closed, the final seed from
// the seed, their hash and the beacon's randomness (beacon: c.Beacon with
// Randomness read, or nil without one), and the order with its tickets
// from firstTicket.
func Draw(c Committed, ids []string, beacon *Beacon, firstTicket int64, now time.Time) (Record, error) {
	sorted := slices.Sorted(slices.Values(ids))
	r := Record{
		Version: Version, Queue: c.Queue, Commitment: c.Hash, OpensAtMs: c.OpensAt.UnixMilli(), OpensAt: c.OpensAt.UTC(),
		Seed: c.Seed.Hex(), Beacon: beacon, Participants: sorted, ParticipantsHash: ParticipantsHash(sorted),
		FirstTicket: firstTicket, DrawnAt: now.UTC(),
	}
	randomness := ""
	if beacon != nil {
		randomness = beacon.Randomness
	}
	r.FinalSeed = FinalSeed(c.Seed, r.ParticipantsHash, randomness)
	order, err := Order(r.FinalSeed, sorted)
	if err != nil {
		return Record{}, err
	}
	r.Order, r.Tickets = order, make([]int64, len(order))
	for i := range order {
		r.Tickets[i] = firstTicket + int64(i)
	}
	return r, nil
}

// stored is a commitment as a store keeps it: the seed in clear (a store
// is trusted with it, as with entry tokens), and the fields a store's
// script compares (state, opensAtMs, epoch, beaconKey) flat.
type stored struct {
	Hash        string  `json:"commitment"`
	Queue       string  `json:"queue"`
	OpensAtMs   int64   `json:"opensAtMs"`
	Beacon      *Beacon `json:"beacon,omitempty"`
	BeaconKey   string  `json:"beaconKey"`
	Seed        string  `json:"seed"`
	MadeAtMs    int64   `json:"madeAtMs"`
	WithdrawnMs int64   `json:"withdrawnAtMs,omitempty"`
	State       State   `json:"state"`
	Epoch       int64   `json:"epoch"`
}

// MarshalStored is c as a store keeps it (UnmarshalStored reads it back):
// JSON whose fields state, opensAtMs, epoch and beaconKey a script may
// compare, madeAtMs and withdrawnAtMs it may set, and whose seed is in
// clear. Never an answer's: Committed's own JSON leaves the seed out.
func (c Committed) MarshalStored() ([]byte, error) {
	s := stored{
		Hash: c.Hash, Queue: c.Queue, OpensAtMs: c.OpensAt.UnixMilli(), Beacon: c.Beacon, BeaconKey: c.BeaconKey(),
		Seed: c.Seed.Hex(), MadeAtMs: c.MadeAt.UnixMilli(), State: c.State, Epoch: c.Epoch,
	}
	if !c.WithdrawnAt.IsZero() {
		s.WithdrawnMs = c.WithdrawnAt.UnixMilli()
	}
	return json.Marshal(s)
}

// UnmarshalStored reads what MarshalStored wrote.
func UnmarshalStored(b []byte) (Committed, error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return Committed{}, fmt.Errorf("a stored commitment: %w", err)
	}
	seed, err := ParseSeed(s.Seed)
	if err != nil {
		return Committed{}, fmt.Errorf("a stored commitment: %w", err)
	}
	c := Committed{
		Hash: s.Hash, Queue: s.Queue, OpensAt: time.UnixMilli(s.OpensAtMs).UTC(), Beacon: s.Beacon, Seed: seed,
		MadeAt: time.UnixMilli(s.MadeAtMs).UTC(), State: s.State, Epoch: s.Epoch,
	}
	if s.WithdrawnMs != 0 {
		c.WithdrawnAt = time.UnixMilli(s.WithdrawnMs).UTC()
	}
	return c, nil
}

// BeaconKey names c's beacon round in one string ("" for none): two
// commitments to one opening with different beacons are different.
func (c Committed) BeaconKey() string {
	if c.Beacon == nil {
		return ""
	}
	return c.Beacon.URL + "#" + strconv.FormatUint(c.Beacon.Round, 10)
}
