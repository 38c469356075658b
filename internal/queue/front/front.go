// Package front is a queue's front as one document, the same for every
// caller (issue 37): how far admission has served, who left above that,
// the pace, the message, and how near the front a page must ask its
// instance instead. Far from the front the question "where am I?" is the
// same question for everyone and its answer changes once a tick, so a page
// that holds its signed ticket (Tickets) works out its own standing from
// this document, which any cache in front of waitroom (a CDN) may answer
// for a second, and asks the instance only near the front. The package
// says what the document holds and how a place is read from it; the HTTP
// route that serves it is httpapi's.
package front

import (
	"math"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// Document is a queue's front as one instant of the instance's snapshot
// saw it (queue.Snapshot), with the settings in force. It names no one:
// tickets only, never a user.
type Document struct {
	// Epoch is the line's (queue.Snapshot.Epoch): a ticket of another
	// epoch is placed by nothing here.
	Epoch int64
	// Head is the lowest ticket waiting (0: nobody waits), Last the last
	// ticket issued, Length how many wait.
	Head, Last, Length int64
	// Left holds, ascending, the tickets above Head of users who left the
	// line; at most queue.SnapshotMaxLeft of them, the lowest. Unlisted
	// counts those beyond it (0 while the list is complete): a ticket
	// above the last listed one is then placed within Unlisted of its
	// exact rank (Place).
	Left     []int64
	Unlisted int64
	// Cleared holds, ascending, for each place an operator cleared from
	// the shadow line that still waits, the ticket it stands just behind
	// (queue.Snapshot.Cleared): it ranks ahead of every higher ticket.
	// Length counts them; they hold no ticket, so they are neither Left
	// nor Unlisted.
	Cleared []int64
	// Pace is the line's pace as the estimate uses it (queue.Pace):
	// EstimateRate is the rate an estimate divides by, Rate the rate in
	// force, and NextTickAdmits what the next tick surely lets in (a
	// place within it is told 0: queue.Pace.NextTickAdmits).
	Rate, EstimateRate float64
	Batch              int
	NextTickAdmits     int64
	Paused, Stalled    bool
	// Model is the estimate's model of the public lane (issue 54;
	// package estimate), from which a page works out the range it shows as
	// the server would (estimate.Of): the people let in per second, the
	// share who take their turn, the rate's spread, the interval, and the
	// rate changes ahead in seconds from the snapshot's instant. Tick is
	// NextTickAdmits; Drawn is false (in a draw the page asks its
	// instance). Rounded (roundModel) so that the document changes no more
	// often than the line does.
	Model estimate.Params
	// Drawn: the queue draws whom it lets in (queueingMethod random), so
	// a ticket holds no place: the page asks its instance, as before.
	Drawn bool
	// OpensAt is an opening still ahead (its pre-queue not yet placed);
	// Placing: it is being placed now. Either way tickets place no one
	// yet (those being placed hold none): the page asks its instance.
	OpensAt time.Time
	Placing bool
	// Stock is what the queue has left to sell; sold out, whoever waits
	// keeps their place and is told so.
	Stock queue.Stock
	// SoldOutPoll is how soon a page in a sold-out line looks again
	// (the queue's soldOutPollSeconds).
	SoldOutPoll time.Duration
	// Message is the operator's message as its setting holds it: one text
	// for everyone, or texts by language; "" for none. The same document
	// for everyone, so every language's text is in it.
	Message any
	// AskWithin is the position within which a page asks its instance
	// (entries/me) instead of this document: where the next ticks may let
	// it in, so READY and the token need the store's exact answer
	// (AskAhead of admission, at least two batches, as the instance's own
	// snapshot answers go to the store there).
	AskWithin int64
	// PresenceWithin and PresenceEvery: with no-shows skipped
	// (abandonAfterSeconds), a page within PresenceWithin of the front
	// (the line's reach, queue.Pace.Reach) asks its instance at least
	// every PresenceEvery, so that admission sees it present. 0: no-shows
	// are not skipped, no heartbeat.
	PresenceWithin int64
	PresenceEvery  time.Duration
	// NotifyLead is the queue's notifyLeadSeconds in force: a page tells
	// its person once when its estimate first comes within it, besides on
	// READY (0: only on READY). Here because the page reads this document
	// and no answer of its own instance says the queue's settings.
	NotifyLead time.Duration
	// Draw is the queue's newest draw commitment while it is pending
	// (package draw): published before the opening, so that the order
	// drawn at it can be checked against it afterwards; "" otherwise.
	Draw string
}

// AskAhead is how much admission, in seconds of the estimate's rate,
// lies between a page asking its instance and its turn. It covers the
// document's age (a cache may serve it MaxAge and StaleFor old, the
// snapshot behind it is up to a tick older), the page's last interval
// between reads near the front (2 s) and a second to spare: so a page
// reaches its instance while the estimate is still above the 2 s within
// which the instance holds a poll until READY (queue.View.AdmissionNear),
// and is let in no later than a page polling its instance all along.
const AskAhead = MaxAge + StaleFor + 2*time.Second + time.Second

// MaxAge is how long a cache may serve the document as fresh; StaleFor is
// how much longer it may serve it while it fetches the next one
// (stale-while-revalidate).
const (
	MaxAge   = time.Second
	StaleFor = time.Second
)

// presenceMargin divides abandonAfterSeconds into the heartbeat of a page
// within the reach: three chances to be seen before admission may judge
// it gone, however the marks fall between instances' flushes.
const presenceMargin = 3

// New is the document of a line in snapshot sn, under c, the queue's
// settings in force (a phase's message, not the queue's own).
func New(sn queue.Snapshot, c queue.InForce) Document {
	p := sn.Pace
	d := Document{Epoch: sn.Epoch, Head: sn.Head, Last: sn.Last, Length: sn.Length, Left: sn.Left,
		Rate: p.Rate, EstimateRate: p.EstimateRate(), Batch: p.Batch, NextTickAdmits: p.NextTickAdmits(), Paused: p.Paused, Stalled: p.Stalled,
		Drawn: p.Drawn, OpensAt: p.OpensAt, Placing: p.Placing, Stock: p.Stock, SoldOutPoll: c.SoldOutPoll, NotifyLead: c.NotifyLead}
	d.Model = model(p, d.NextTickAdmits)
	d.Cleared = sn.Cleared
	if d.Left == nil {
		d.Left = []int64{}
	}
	if d.Cleared == nil {
		d.Cleared = []int64{}
	}
	if !sn.Complete && sn.Head > 0 {
		// Every ticket from Head to Last is waiting or left (tickets are
		// consecutive, admission takes the lowest, only leaving opens a
		// gap), so the leavers not listed are what the count of those
		// waiting with a ticket (the cleared hold none) lacks.
		withTicket := sn.Length - int64(len(sn.Cleared))
		d.Unlisted = max(0, sn.Last-sn.Head+1-withTicket-int64(len(sn.Left)))
	}
	message, _ := queue.SettingNamed("message")
	d.Message = message.Value(c.Config)
	d.AskWithin = max(2*int64(p.Batch), int64(math.Ceil(p.EstimateRate()*AskAhead.Seconds())))
	if c.AbandonAfter > 0 && p.Reach > 0 {
		d.PresenceWithin = p.Reach
		d.PresenceEvery = max(time.Second, c.AbandonAfter/presenceMargin)
	}
	return d
}

// model is the estimate's parameters of the public lane's pace p, as
// queue.Pace's own (its params: admitRate, and the steps ahead at the
// lane's share), rounded: rates to four significant digits, the claim,
// the spread and the interval to thousandths, the steps' instants to whole
// seconds. Unrounded, the fitted claim and spread move a little at every
// tick and the steps' instants at every snapshot, so the document (and its
// ETag) would change where the line did not; rounded, no estimate moves by
// more than about a hundredth (a claim, at least 0.05, by half a
// thousandth), and a step by half a second.
func model(p queue.Pace, tick int64) estimate.Params {
	rate, share := p.Rate, 1.0
	if p.Held > 0 {
		rate = p.Held
	}
	if p.LaneShare > 0 {
		share = p.LaneShare
	}
	claim := p.Claim
	if claim <= 0 {
		claim = 1 // a Pace not made by queue.LinePace, as Pace.EstimateRate reads it
	}
	m := estimate.Params{Rate: significant(rate * share), Claim: thousandths(claim), Spread: thousandths(p.Spread), Tick: tick,
		Interval: thousandths(p.Interval.Seconds()), Steps: make([]estimate.Step, len(p.Ahead))}
	for i, s := range p.Ahead {
		m.Steps[i] = estimate.Step{After: math.Round(s.After), Rate: significant(s.Rate * share)}
	}
	return m
}

// thousandths is x rounded to the nearest thousandth.
func thousandths(x float64) float64 { return math.Round(x*1000) / 1000 }

// significant is x rounded to four significant digits: a lane's small
// share of a slow rate keeps its size, as thousandths would not. The
// power of ten multiplies or divides whole, so the result prints short.
func significant(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	digits := 3 - int(math.Floor(math.Log10(math.Abs(x))))
	if digits >= 0 {
		scale := math.Pow10(digits)
		return math.Round(x*scale) / scale
	}
	scale := math.Pow10(-digits)
	return math.Round(x/scale) * scale
}

// PendingDraw is the commitment a document for an opening at opensAt
// shows (Document.Draw) from the queue's ledger, oldest first: the newest,
// while it is pending and to that opening. A commitment to an opening
// since cleared, or of the queue's earlier life, is not this one's.
func PendingDraw(ledger []draw.Committed, opensAt time.Time) string {
	if n := len(ledger); n > 0 && ledger[n-1].State == draw.Pending && !opensAt.IsZero() && ledger[n-1].OpensAt.UnixMilli() == opensAt.UnixMilli() {
		return ledger[n-1].Hash
	}
	return ""
}

// Place is the position a page holding ticket (of epoch) works out from
// the document: the 1-based place it shows, and the lowest place it may
// really have (equal to it unless leavers beyond the list lie below the
// ticket: then within Unlisted). ok is false when the document places no
// one by that ticket: another epoch, nobody waiting, the ticket below the head (admitted, or
// skipped as a no-show) or among the leavers, a draw or an opening; the
// page then asks its instance.
func (d Document) Place(epoch, ticket int64) (position, lowest int64, ok bool) {
	if epoch != d.Epoch || d.Drawn || d.Placing || !d.OpensAt.IsZero() {
		return 0, 0, false
	}
	return queue.Position(ticket, d.Head, d.Last, d.Left, d.Cleared, d.Unlisted)
}

// Ask says whether a page at this lowest place must ask its instance now
// rather than read the document: admission may reach it before its next
// read.
func (d Document) Ask(lowest int64) bool { return lowest <= d.AskWithin }
