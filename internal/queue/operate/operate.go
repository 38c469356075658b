// Package operate is the operator's calls on the line: a queue's stored
// config, created, changed or deleted; its stats, its per-minute rollups
// and its rate's changes; what it has left to sell; the shadow line's
// suspects, listed and cleared; the list of queues, and a queue made sure
// of. queue.Service is the user's path alone (enter,
// status, leave and what they read); the admin API, the queues file, the
// gateway's sold-out and restock commands and the loops that visit every
// queue call this. A change made here reaches the instance's service
// through the line's signals (signals.Line.Reconfigured, Moved): its
// config in force and its snapshot of the line are read again.
package operate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/queue/signals"
	"github.com/waitroom/waitroom/internal/suspect"
)

// Operator makes the operator's calls on a queue's store.
type Operator struct {
	// Clock judges the phase in force in Stats and the end of Rollups:
	// time.Now unless a test sets it.
	Clock func() time.Time

	// Audit hears each change made with an actor in its context (the
	// audit log, audit.go); nil: none is kept.
	Audit Recorder

	store queue.Store
	line  *signals.Line // told of each change, which the instance's service hears

	knownMu sync.Mutex
	known   []string // the last list of queues the store gave
}

// New returns the operator's calls on store, telling line of each change
// made (the instance's queue.Service is made on the same line).
func New(store queue.Store, line *signals.Line) *Operator {
	return &Operator{Clock: time.Now, store: store, line: line}
}

// SetStock tells the queue what it has left to sell (Store.SetStock); a
// stock of 0 is sold out, and any other (or one not known) is a restock:
// whoever waits has their place again, and admission goes on. Status polls
// through this instance see the change at once; through another, within
// the age of that instance's snapshot of the line (queue.NewService).
func (o *Operator) SetStock(ctx context.Context, q string, st queue.Stock, onlyLower bool) (queue.Stock, error) {
	if err := queue.ValidateQueueName(q); err != nil {
		return queue.Stock{}, err
	}
	if st.Known && (st.Units < 0 || st.Units > maxUnits) {
		return queue.Stock{}, fmt.Errorf("%w: unitsLeft must be 0..%d, got %d", queue.ErrInvalidConfig, maxUnits, st.Units)
	}
	before := o.stockBefore(ctx, q)
	now, err := o.store.SetStock(ctx, q, st, onlyLower)
	if err == nil {
		o.line.Moved(q, nil, nil)
		o.recordStock(ctx, q, before, now)
	}
	return now, err
}

// maxUnits bounds a queue's units left, as the order API bounds a
// product's stock.
const maxUnits = 1_000_000_000

// Config returns a queue's config as stored (no phase put over it:
// queue.Service.ConfigInForce).
func (o *Operator) Config(ctx context.Context, q string) (queue.Config, error) {
	if err := queue.ValidateQueueName(q); err != nil {
		return queue.Config{}, err
	}
	return o.store.Config(ctx, q)
}

// PutConfig validates and stores a queue's config, creating the queue.
func (o *Operator) PutConfig(ctx context.Context, q string, c queue.Config) error {
	if err := queue.ValidateQueueName(q); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	before := o.configBefore(ctx, q)
	err := o.store.PutConfig(ctx, q, c)
	o.line.Reconfigured(q)
	if err == nil && o.audited(ctx) {
		o.recordConfig(ctx, q, before, c)
	}
	return err
}

// DeleteQueue removes a queue with everyone in it (Store.DeleteQueue):
// whoever polls it next is told it is not found.
func (o *Operator) DeleteQueue(ctx context.Context, q string) error {
	if err := queue.ValidateQueueName(q); err != nil {
		return err
	}
	err := o.store.DeleteQueue(ctx, q)
	o.line.Reconfigured(q)
	o.recordDelete(ctx, q, err)
	return err
}

// AddCodes keeps access codes for the queue (Store.AddCodes: by hash; a
// code held already is a duplicate, left as it was). ErrQueueNotFound
// without the queue.
func (o *Operator) AddCodes(ctx context.Context, q string, codes []accesscode.Code) (accesscode.Added, error) {
	if err := queue.ValidateQueueName(q); err != nil {
		return accesscode.Added{}, err
	}
	added, err := o.store.AddCodes(ctx, q, codes)
	if err == nil {
		o.recordCodes(ctx, q, codes, added)
	}
	return added, err
}

// Stats returns the operator's view of a queue.
func (o *Operator) Stats(ctx context.Context, q string) (queue.Stats, error) {
	if err := queue.ValidateQueueName(q); err != nil {
		return queue.Stats{}, err
	}
	st, err := o.store.Stats(ctx, q)
	st.Queue = q
	return inForce(st, o.Clock()), err
}

// Rollups reads a queue's minutes from since to until, oldest first, and
// the sale's moments among them (rollup.Build), as the store keeps them
// (rows older than the retention are gone; minutes in which nothing
// changed, written by no instance, are filled in: rollup.Fill). The row of
// the minute before since is read too, for the totals the first minute's
// counts start from.
func (o *Operator) Rollups(ctx context.Context, q string, since, until time.Time) (rollup.Rollup, error) {
	if err := queue.ValidateQueueName(q); err != nil {
		return rollup.Rollup{}, err
	}
	since, until = since.UTC().Truncate(time.Minute), until.UTC()
	if until.Before(since) || until.Sub(since) > rollup.MaxRange {
		return rollup.Rollup{}, fmt.Errorf("%w: since must come before until, at most %v before it", queue.ErrInvalidConfig, rollup.MaxRange)
	}
	rows, err := o.store.Rollups(ctx, q, since.Add(-time.Minute), until)
	if err != nil {
		return rollup.Rollup{}, err
	}
	minutes, moments := rollup.Build(rows)
	end := until
	if now := o.Clock(); now.Before(end) {
		end = now
	}
	minutes = rollup.Fill(minutes, end)
	r := rollup.Rollup{Queue: q, Since: since, Until: until, Minutes: []rollup.Minute[rollup.Histogram]{}, Moments: []rollup.Moment{}}
	for _, m := range minutes {
		if !m.Start.Before(since) {
			r.Minutes = append(r.Minutes, m)
		}
	}
	for _, m := range moments {
		if !m.At.Before(since) && !m.At.After(until) {
			r.Moments = append(r.Moments, m)
		}
	}
	return r, nil
}

// Roll writes this instance's reading of a queue into its row of the
// minute (Store.Roll).
func (o *Operator) Roll(ctx context.Context, q string, w rollup.Write) error {
	if err := queue.ValidateQueueName(q); err != nil {
		return err
	}
	return o.store.Roll(ctx, q, w)
}

// RateChanges lists the recent changes of a queue's admission rate,
// oldest first (the admin chart).
func (o *Operator) RateChanges(ctx context.Context, q string) ([]queue.RateChange, error) {
	if err := queue.ValidateQueueName(q); err != nil {
		return nil, err
	}
	return o.store.RateChanges(ctx, q)
}

// Queues lists the queue names.
func (o *Operator) Queues(ctx context.Context) ([]string, error) {
	names, err := o.store.Queues(ctx)
	if err == nil {
		o.knownMu.Lock()
		o.known = names
		o.knownMu.Unlock()
	}
	return names, err
}

// KnownQueues lists the queues for the loops that visit them all (the
// history, the metrics, the store's health): the store's list, or when the
// store cannot give it, the last list it gave. On Redis Cluster the list
// lives on one node; while that node is down the queues on the others are
// still there to serve, and to watch.
func (o *Operator) KnownQueues(ctx context.Context) []string {
	if names, err := o.Queues(ctx); err == nil {
		return names
	}
	o.knownMu.Lock()
	defer o.knownMu.Unlock()
	return o.known
}

// EnsureQueue creates the queue with c unless it exists already, and says
// whether it did; an existing queue keeps its config, so restarting an
// instance never undoes an operator's change.
func (o *Operator) EnsureQueue(ctx context.Context, q string, c queue.Config) (created bool, err error) {
	_, err = o.store.Config(ctx, q)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, queue.ErrQueueNotFound) {
		return false, err
	}
	return true, o.PutConfig(ctx, q, c)
}

// inForce makes EffectiveRate and EffectiveWhy the rate in force at now: a
// phase's own fixed rate while one is in force (the store keeps the
// adaptive rate it would otherwise use). While admission lets nobody in
// at that rate (sold out, paused), the reason says so (SoldOutWhy,
// PausedWhy) and the rate stays the one admission resumes at: it is the
// rate the metrics, the history chart and the sale's report draw, where
// the gap between it and the people let in shows what held the line back
// (MeasuredRate is what admission let in, 0 then).
func inForce(st queue.Stats, now time.Time) queue.Stats {
	in := st.Config.InForce(now)
	if in.PhaseInForce != "" && !in.Adaptive && in.RatePerSecond != st.Config.RatePerSecond {
		st.EffectiveRate, st.EffectiveWhy = in.RatePerSecond, in.RateDerivation
	}
	switch {
	case st.Stock.SoldOut():
		st.EffectiveWhy = SoldOutWhy
	case in.Paused:
		st.EffectiveWhy = PausedWhy
	}
	return st
}

// The rate's reason (queue.Stats.EffectiveWhy) while admission lets nobody in,
// sold out before paused (a resume lets nobody into a sold-out line).
// Words for people, as the adaptive rate's reasons are: a program reads
// queue.Stock.SoldOut and queue.Config.Paused.
const (
	SoldOutWhy = "sold out: admission lets nobody in until a restock, then at this rate"
	PausedWhy  = "paused: admission lets nobody in until resumed, then at this rate"
)

// FirstUse records a one-time key of the queue (Store.FirstUse): the
// claims every instance makes alike, of an event to tell the shop
// (package events) or a solved challenge spent (the gatekeeper's replay
// guard); exactly one caller gets true until ttl passes.
func (o *Operator) FirstUse(ctx context.Context, q, key string, ttl time.Duration) (bool, error) {
	if err := queue.ValidateQueueName(q); err != nil {
		return false, err
	}
	return o.store.FirstUse(ctx, q, key, ttl)
}

// ErrSuspectNotFound: the shadow line holds no place of that number (never
// taken, or since let in, left, expired or cleared).
var ErrSuspectNotFound = errors.New("no such suspect in the shadow line")

// MaxSuspects bounds one listing of the shadow line (Suspects).
const MaxSuspects = 1000

// Suspects lists up to limit (1..MaxSuspects) places of the queue's shadow
// line, oldest first, with the queue's stats (ShadowLength says how many
// there are in all). The stats are read first: an unknown queue is
// ErrQueueNotFound, whatever the store's shadow line would say of it.
func (o *Operator) Suspects(ctx context.Context, q string, limit int) ([]suspect.Place, queue.Stats, error) {
	if limit < 1 || limit > MaxSuspects {
		return nil, queue.Stats{}, fmt.Errorf("%w: limit must be 1..%d, got %d", queue.ErrInvalidConfig, MaxSuspects, limit)
	}
	st, err := o.Stats(ctx, q)
	if err != nil {
		return nil, st, err
	}
	list, err := o.store.Suspects(ctx, q, limit)
	return list, st, err
}

// ClearSuspect moves the shadow line's place numbered ticket into the real
// line (Store.ClearSuspect): ErrSuspectNotFound when there is none, and
// ErrQueueNotFound for an unknown queue. This instance hears of it as of
// anyone joining (Joined: an idle admission loop has someone to let in)
// and of a move (Moved: the people behind where it lands stand one
// further back, which held status requests and snapshots must see).
func (o *Operator) ClearSuspect(ctx context.Context, q string, ticket int64) error {
	if err := queue.ValidateQueueName(q); err != nil {
		return err
	}
	found, err := o.store.ClearSuspect(ctx, q, ticket)
	switch {
	case err != nil:
		return err
	case found:
		o.line.Joined(q)
		o.line.Moved(q, nil, nil)
		o.recordCleared(ctx, q, ticket)
		return nil
	}
	// Not found: tell an unknown queue apart, as every other call does.
	if _, err := o.store.Config(ctx, q); err != nil {
		return err
	}
	return ErrSuspectNotFound
}
