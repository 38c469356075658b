package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/front"
)

// A draw anyone can check (issue 57): each queue's ledger of commitments,
// published at GET /api/v1/queues/{queue}/draw, in the front document
// while the newest is pending, and in the admin schedule; and the record
// of each drawn one. A seed is published only inside a record: the
// ledger's entries reach an answer through commitmentJSON alone, never
// through draw.Committed's own forms, and the cache keeps none.

// DrawLedger is where the draws are read (queue.Inspector's Draws and
// DrawRecord: the store's).
type DrawLedger interface {
	Draws(ctx context.Context, queue string) ([]draw.Committed, error)
	DrawRecord(ctx context.Context, queue, commitment string) (draw.Record, bool, error)
}

// errDrawNotFound: no record is kept for the commitment asked for (none
// such, or not drawn yet).
var errDrawNotFound = errors.New("no draw is published for that commitment")

// errBadCommitment: ?commitment= is not a commitment (64 lowercase hex).
var errBadCommitment = errors.New("commitment must be 64 lowercase hex digits")

// errBadParticipant: ?participant= is not a participant id (32 lowercase
// hex).
var errBadParticipant = errors.New("participant must be 32 lowercase hex digits")

// commitmentJSON is a commitment as anyone may see it (openapi.yaml's
// DrawCommitment): never its seed.
type commitmentJSON struct {
	Commitment  string      `json:"commitment"`
	OpensAt     time.Time   `json:"opensAt"`
	MadeAt      time.Time   `json:"madeAt"`
	State       draw.State  `json:"state"`
	WithdrawnAt *time.Time  `json:"withdrawnAt,omitempty"`
	Beacon      *beaconJSON `json:"beacon,omitempty"`
}

// beaconJSON names a commitment's beacon round (its randomness is the
// record's, once read).
type beaconJSON struct {
	URL   string `json:"url"`
	Round uint64 `json:"round"`
}

func toCommitmentJSON(c draw.Committed) commitmentJSON {
	out := commitmentJSON{Commitment: c.Hash, OpensAt: c.OpensAt.UTC(), MadeAt: c.MadeAt.UTC(), State: c.State}
	if !c.WithdrawnAt.IsZero() {
		at := c.WithdrawnAt.UTC()
		out.WithdrawnAt = &at
	}
	if c.Beacon != nil {
		out.Beacon = &beaconJSON{URL: c.Beacon.URL, Round: c.Beacon.Round}
	}
	return out
}

func toCommitmentsJSON(all []draw.Committed) []commitmentJSON {
	out := make([]commitmentJSON, len(all))
	for i, c := range all {
		out[i] = toCommitmentJSON(c)
	}
	return out
}

// drawLedgerAge is how old a queue's ledger may be when an answer is built
// from it: it changes when an opening is set, moved or drawn, so the front
// document and the draw route cost the store one read a second per queue
// at most, however many ask.
const drawLedgerAge = time.Second

// drawCache holds each queue's ledger, read at most once per drawLedgerAge
// while the others wait for it, and the records drawn, which never change
// once kept.
type drawCache struct {
	ledger DrawLedger
	logger *slog.Logger

	mu     sync.Mutex
	queues map[string]*drawEntry
}

type drawEntry struct {
	mu     sync.Mutex // held while reading: the others wait for it
	readAt time.Time
	read   bool             // list holds a read that succeeded
	list   []draw.Committed // seeds blanked
	err    error            // the last read's
	failed bool             // the last read failed (logged once a run of failures)

	// records holds the records last asked for, newest last, at most
	// keptRecords: a record of 100,000 people is some 15 MB kept (its JSON
	// and its index), and a queue's draws are many only if it is reused.
	// Its own lock: reading one must not hold the front document back.
	recMu   sync.Mutex
	records []*keptRecord
}

// keptRecords is how many records each queue's entry keeps.
const keptRecords = 2

// keptRecord is a drawn commitment's record as the route answers it: its
// JSON, and where each participant stands in its order, so that a person
// is told their place without downloading everyone's (a record of 100,000
// people is some 7 MB).
type keptRecord struct {
	hash  string
	json  []byte
	place map[string]int // participant id → index in the order
	first int64          // the ticket of the order's first
	of    int
}

func newDrawCache(ledger DrawLedger, logger *slog.Logger) *drawCache {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &drawCache{ledger: ledger, logger: logger, queues: map[string]*drawEntry{}}
}

func (c *drawCache) entry(q string) *drawEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.queues[q]
	if !ok {
		e = &drawEntry{}
		c.queues[q] = e
	}
	return e
}

// forget drops a queue's entry: a name that is no queue and has no ledger
// keeps nothing here.
func (c *drawCache) forget(q string) {
	c.mu.Lock()
	delete(c.queues, q)
	c.mu.Unlock()
}

// list is the queue's ledger, oldest first, read afresh when older than
// drawLedgerAge (a failed read too, so a store away is asked once a second
// per queue, not once a request). It answers the last good read while the
// store fails, and the error only when none ever succeeded.
func (c *drawCache) list(ctx context.Context, q string) ([]draw.Committed, error) {
	if c.ledger == nil {
		return nil, nil
	}
	e := c.entry(q)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.readAt.IsZero() || time.Since(e.readAt) >= drawLedgerAge {
		all, err := c.ledger.Draws(ctx, q)
		switch {
		case err != nil && ctx.Err() != nil:
			// This caller left: its failure is no news of the store, and
			// the next caller reads afresh.
			return nil, err
		case err != nil && !e.failed:
			e.failed = true
			c.logger.Warn("reading the queue's draws failed; the last read is published meanwhile", "queue", q, "err", err)
		case err == nil:
			e.failed, e.read, e.list = false, true, withoutSeeds(all)
		}
		e.readAt, e.err = time.Now(), err
	}
	if !e.read {
		return nil, e.err
	}
	return e.list, nil
}

// withoutSeeds copies all with every seed blanked: what a cache shared by
// every answer may hold.
func withoutSeeds(all []draw.Committed) []draw.Committed {
	out := make([]draw.Committed, len(all))
	for i, c := range all {
		c.Seed = draw.Seed{}
		out[i] = c
	}
	return out
}

// pending is the queue's newest commitment while it is pending
// (front.PendingDraw): "" when there is none, or the ledger cannot be
// read (the front document goes on without it).
func (c *drawCache) pending(ctx context.Context, q string, opensAt time.Time) string {
	all, _ := c.list(ctx, q)
	return front.PendingDraw(all, opensAt)
}

// recordOf is the record of the drawn commitment c, as published (the
// frozen encoding's JSON, seed included: it is drawn), read once.
func (c *drawCache) recordOf(ctx context.Context, q string, commitment draw.Committed) (*keptRecord, error) {
	if commitment.State != draw.Drawn {
		return nil, errDrawNotFound
	}
	e := c.entry(q)
	e.recMu.Lock()
	defer e.recMu.Unlock()
	for i, k := range e.records {
		if k.hash == commitment.Hash {
			e.records = append(slices.Delete(e.records, i, i+1), k)
			return k, nil
		}
	}
	r, ok, err := c.ledger.DrawRecord(ctx, q, commitment.Hash)
	if err != nil {
		return nil, err
	}
	if !ok || r.Commitment != commitment.Hash {
		return nil, errDrawNotFound
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	k := &keptRecord{hash: commitment.Hash, json: b, place: make(map[string]int, len(r.Order)), first: r.FirstTicket, of: len(r.Order)}
	for i, id := range r.Order {
		k.place[id] = i
	}
	if len(e.records) >= keptRecords {
		e.records = slices.Delete(e.records, 0, 1)
	}
	e.records = append(e.records, k)
	return k, nil
}

// drawJSON is the draw route's answer but its record (openapi.yaml's
// Draw), which is spliced in after.
type drawJSON struct {
	Queue       string           `json:"queue"`
	Commitments []commitmentJSON `json:"commitments"`
	Standing    *standingJSON    `json:"standing,omitempty"`
}

// standingJSON is where one participant stands in a record's order
// (openapi.yaml's DrawStanding): place 1 is the first drawn.
type standingJSON struct {
	Participant string `json:"participant"`
	Commitment  string `json:"commitment"`
	Place       int    `json:"place"`
	Of          int    `json:"of"`
	Ticket      int64  `json:"ticket"`
}

// draw serves the queue's draws: every commitment ever made, oldest first,
// and the record of the newest drawn one, or with ?commitment= that
// commitment's (404 draw_not_found while none is kept). Public and the
// same for everyone, so any cache may keep it as long as the front
// document.
func (s *Server) draw(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	asked, err := commitmentAsked(r)
	var who string
	if err == nil {
		who, err = participantAsked(r)
	}
	if err == nil {
		err = queue.ValidateQueueName(q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	all, err := s.draws.list(r.Context(), q)
	if err == nil && len(all) == 0 {
		// No ledger: a queue that exists has had no opening yet.
		_, err = s.Queue.ConfigInForce(r.Context(), q)
	}
	if err != nil && len(all) == 0 { // nothing worth keeping for the name
		s.draws.forget(q)
	}
	var rec *keptRecord
	var hash string
	if err == nil {
		rec, hash, err = s.drawRecord(r.Context(), q, all, asked)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	answer := drawJSON{Queue: q, Commitments: toCommitmentsJSON(all)}
	if who != "" && rec != nil {
		// One person's place instead of everyone's: a page asks this.
		if i, ok := rec.place[who]; ok {
			answer.Standing = &standingJSON{Participant: who, Commitment: hash, Place: i + 1, Of: rec.of, Ticket: rec.first + int64(i)}
		}
		rec = nil
	}
	body, err := json.Marshal(answer)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h["Cache-Control"], h["Content-Type"] = frontCacheControl, jsonContentType
	w.WriteHeader(http.StatusOK)
	if rec != nil { // spliced, not copied: a record of many people is megabytes
		w.Write(body[:len(body)-1])
		w.Write([]byte(`,"record":`))
		w.Write(rec.json)
		w.Write([]byte("}\n"))
		return
	}
	w.Write(append(body, '\n'))
}

// drawRecord is the record the draw route answers: the asked commitment's
// (errDrawNotFound unless it is listed drawn), or without one the newest
// drawn commitment's (nil: none is drawn).
func (s *Server) drawRecord(ctx context.Context, q string, all []draw.Committed, asked string) (*keptRecord, string, error) {
	for i := len(all) - 1; i >= 0; i-- {
		if c := all[i]; asked != "" && c.Hash == asked || asked == "" && c.State == draw.Drawn {
			k, err := s.draws.recordOf(ctx, q, c)
			return k, c.Hash, err
		}
	}
	if asked != "" {
		return nil, "", errDrawNotFound
	}
	return nil, "", nil
}

// participantAsked is ?participant=, "" when not given; anything but a
// participant id (32 lowercase hex digits) is refused.
func participantAsked(r *http.Request) (string, error) {
	v, ok := r.URL.Query()["participant"]
	if !ok {
		return "", nil
	}
	if len(v) != 1 || !draw.IsParticipantID(v[0]) {
		return "", errBadParticipant
	}
	return v[0], nil
}

// commitmentAsked is ?commitment=, "" when not given; anything but 64
// lowercase hex digits is refused.
func commitmentAsked(r *http.Request) (string, error) {
	v, ok := r.URL.Query()["commitment"]
	if !ok {
		return "", nil
	}
	if len(v) != 1 || !isCommitment(v[0]) {
		return "", errBadCommitment
	}
	return v[0], nil
}

func isCommitment(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// participant is what a person waiting in the pre-queue is shown of the
// draw: their participant id and its salt (zero: not in the pre-queue, or
// no draw is made here). Derived, no store call.
func (s *Server) participant(q, user string, v queue.View) draw.Participant {
	if s.Participants == nil || v.State != queue.Waiting || v.OpensAt.IsZero() {
		return draw.Participant{}
	}
	return s.Participants.Of(q, user)
}
