// Package queue owns the waiting line: entering, status, leaving, admission
// at the rate the bottleneck can bear, entry tokens, and the wait estimate
// shown to people in line. It knows neither HTTP nor SQL; the atomic steps
// live behind Store, implemented on Redis (redisstore) and in process
// (memstore), both held to the suite in storetest.
package queue

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/suspect"
)

// DefaultQueue exists from the start; products without a queue are behind it.
const DefaultQueue = "default"

// State is where a user stands with a queue.
type State string

const (
	Waiting    State = "WAITING"
	Ready      State = "READY"
	NotInQueue State = "NOT_IN_QUEUE"
	// SoldOut: the user holds a place, but the queue has nothing left to
	// sell (Stock.SoldOut); a restock gives them their place back.
	SoldOut State = "SOLD_OUT"
	// Moved: the user's place was carried to another session (issue 55;
	// Store.ClaimHandoff), which holds it now; they hold none. Told for
	// handoff.MovedFor at least, then NotInQueue.
	Moved State = "MOVED"
)

// Errors of the line. The HTTP layer maps each to a status in one table.
var (
	ErrQueueNotFound = errors.New("queue not found")
	ErrQueueFull     = errors.New("queue is full")
	// ErrSoldOut: the queue has nothing left to sell, so nobody new takes
	// a place (Stock.SoldOut).
	ErrSoldOut       = errors.New("sold out")
	ErrInvalidUser   = errors.New("invalid user id")
	ErrInvalidQueue  = errors.New("invalid queue name")
	ErrInvalidConfig = errors.New("invalid queue config")
	// ErrTokenInvalid: missing, wrong, expired, or another user's token.
	ErrTokenInvalid = errors.New("entry token invalid")
	// ErrTokenInUse: the same token is already being used by a request in flight.
	ErrTokenInUse = errors.New("entry token in use")
	// ErrUnavailable wraps failures of the store itself (Redis down).
	ErrUnavailable = errors.New("queue store unavailable")
	// ErrNotOwner: placing an opening whose lease another instance holds.
	ErrNotOwner = errors.New("opening placed by another instance")
)

// Standing is a user's standing as the store sees it, with the line's pace
// read in the same step so the estimate matches the position.
type Standing struct {
	State State
	// PreQueue: waiting for the line's opening (Pace.OpensAt), with no
	// place yet.
	PreQueue bool
	// Position is 1-based (1 = next in); Length counts everyone waiting.
	Position, Length int64
	// Ticket is the waiting user's place-holder: the INCR number they
	// joined with. With a Snapshot it gives the position without the store.
	// A place cleared from the shadow line has none (0): it is placed by
	// the store only.
	Ticket int64
	// Epoch is the line's, as for Snapshot.Epoch: a ticket means something
	// only within the epoch it was given in.
	Epoch     int64
	Token     string
	ExpiresAt time.Time
	Pace      Pace
	// Shadow: the place is in the shadow line (a suspect's, EnterShadow).
	// Position is then the one it is shown, where a person who arrived
	// with it would stand, and Ticket its number in the shadow line, which
	// the real line's snapshot never places.
	Shadow bool
	// Behind, for a Shadow place, is the real line's last ticket when it
	// arrived (Suspect.Behind): its Position is one more than the people
	// waiting up to that ticket.
	Behind int64
	// Lane is the lane the place is in (issue 53), "" for lane.Public:
	// Position and Length are then within that lane, and Pace.LaneShare
	// its share of the rate. A ticket in another lane than Public places
	// nobody through a Snapshot (the front document is the public lane's):
	// such a place is answered by the store.
	Lane string
}

// Stock is what a queue has left to sell, as the shop last told it
// (Store.SetStock): the units left of every product the queue sells. The
// zero Stock is not known: no cap on admission, never sold out.
type Stock struct {
	Known bool
	Units int64 // while Known; never negative
}

// SoldOut says the queue has nothing left to sell: admission stops, nobody
// new takes a place, and whoever waits is told so, keeping their place.
func (s Stock) SoldOut() bool { return s.Known && s.Units <= 0 }

// Snapshot is a queue's line as one instant saw it: enough to work out
// anyone's position from their ticket alone (Position), so most status polls
// need no trip to the store. Tickets are consecutive, admission takes the
// lowest, and only leaving opens a gap, so everyone with a ticket from Head
// to Last who is not in Left is waiting, and a ticket's rank is its distance
// from Head less the gaps before it.
type Snapshot struct {
	// Head is the lowest ticket in line and Last the last ticket issued;
	// Head is 0 when no one with a ticket waits. Length counts everyone
	// waiting, the cleared places too.
	Head, Last int64
	Length     int64
	// Cleared holds, ascending, for each place cleared from the shadow
	// line (ClearSuspect) still waiting, the ticket it stands just behind
	// (its store score less one half): it ranks above every ticket higher
	// than that, so ticket T's position is T − Head + 1 − (Left below T)
	// + (Cleared below T). Left never lists a cleared place.
	Cleared []int64
	// Left holds, ascending, the tickets above Head whose users left the
	// line. Complete is false when there were more than the store returns
	// (SnapshotMaxLeft); such a snapshot answers no one.
	Left     []int64
	Complete bool
	// Epoch names this life of the queue's line: set when the queue is
	// created, it changes only when the store lost the queue (Redis lost
	// its data) and it was created again, with tickets counting from 1
	// again. Tickets from another epoch place no one.
	Epoch int64
	Pace  Pace
}

// SnapshotMaxLeft bounds Snapshot.Left: beyond it, status goes to the store.
const SnapshotMaxLeft = 4096

// Admission is the outcome of one admission attempt.
type Admission struct {
	// Ticked says this call claimed a due tick (even if nobody was admitted:
	// the line was empty or the queue paused).
	Ticked bool
	// Admitted are the users popped in this tick, in line order, each with
	// its token written in the same atomic step.
	Admitted []string
	// Expires is when the tokens of Admitted expire (the tick's time by
	// the store's clock plus the tokenTtlSeconds in force).
	Expires time.Time
	// Skipped counts the no-shows this tick passed over (AbandonAfter).
	Skipped int
	// NextIn is how long until the next tick is due, by the store's clock.
	NextIn time.Duration
	// Waited says, for each of Admitted (in its order), when they took
	// their place and the wait they were shown then, kept by the store
	// with their place (time in line, the estimate's accuracy).
	Waited []rollup.Wait
	// Idle: the line was empty and nothing was due to change; until
	// someone joins, the next tick can only repeat this one.
	Idle bool
	// Shadow: Admitted are places of the shadow line, let in last
	// (suspect.AdmitLast) by a tick that found nobody waiting in the line; they
	// count in Stats.ShadowAdmittedTotal, not AdmittedTotal.
	Shadow bool
}

// Stats is the operator's view of one queue.
type Stats struct {
	Queue        string
	Config       Config
	Length       int64
	ActiveTokens int64
	// The totals add up at any instant:
	//   EnteredTotal  = Length + AdmittedTotal + LeftTotal
	//   AdmittedTotal + ShadowAdmittedTotal =
	//       ConsumedTotal + ActiveTokens + ExpiredTotal + ReturnedTotal
	EnteredTotal  int64 // joins (re-entries keep their place and do not count)
	AdmittedTotal int64
	LeftTotal     int64 // left the line before admission
	ConsumedTotal int64 // tokens spent on an order
	ExpiredTotal  int64 // tokens that ran out
	ReturnedTotal int64 // unused tokens given back
	// InlineTotal counts the admitted who never waited: let straight in
	// while the line was quiet (AdmitNow), included in EnteredTotal and
	// AdmittedTotal.
	InlineTotal int64
	// MeasuredRate is the admitted users per second over the last few
	// seconds (all instances together); 0 when nothing was admitted lately.
	MeasuredRate float64
	// EffectiveRate is the rate admission uses now (the adaptive rate, or
	// the configured one; read through operate.Operator.Stats, a phase's own while
	// one is in force) and EffectiveWhy its reason.
	EffectiveRate float64
	EffectiveWhy  string
	// AbandonedTotal counts waiting users skipped at admission as no-shows;
	// they balance like leavers:
	//   EnteredTotal = Length + AdmittedTotal + LeftTotal + AbandonedTotal
	// (+ PreQueued while an opening is being placed: its users hold tickets).
	AbandonedTotal int64
	// PreQueued counts users waiting for the opening, not yet in line.
	PreQueued int64
	// Stock is what the queue has left to sell, as last told.
	Stock Stock
	// The shadow line (EnterShadow) balances apart from the real line:
	//   ShadowEnteredTotal = ShadowLength + ShadowAdmittedTotal +
	//                        ShadowLeftTotal + ClearedTotal
	// and a cleared place then counts in EnteredTotal as a join (and in
	// Length, AdmittedTotal or LeftTotal as a person would; one cleared
	// into an opening's pre-queue joins, as a person there does, when the
	// opening reserves its ticket); the shadow line's admitted hold tokens
	// like anyone's.
	ShadowLength        int64
	ShadowEnteredTotal  int64
	ShadowAdmittedTotal int64
	ShadowLeftTotal     int64
	ClearedTotal        int64
	// Lanes are the figures of each lane (issue 53) in force or with
	// people waiting, in the order of the lanes in force; none for a queue
	// without lanes. Length is their sum.
	Lanes []lane.Stats
	// Changed says when the states a shop is told of last changed.
	Changed Changes
}

// Changes says when, by the store's clock, a queue's states that a shop is
// told of (package events) last changed; zero while they have not changed
// since the queue was created. Every instance reads the same instants, so
// every instance names one change alike, however late it notices it.
type Changes struct {
	// Paused: Config.Paused was set or cleared.
	Paused time.Time
	// Method: Config.Method was set to another method.
	Method time.Time
	// SoldOut: Stock.SoldOut became true, or false again.
	SoldOut time.Time
}

// RateSample is protected calls folded by one instance over one window: how
// many, how many overloaded (failed or timed out), their latencies in
// latency buckets and in sum, and, where the backend's calls go through a
// pool of connections this instance holds (the order database), the time
// they held a connection and the connections the pool had for them.
type RateSample struct {
	Calls, Overloaded int64
	// Latency counts calls by latency in ms, in rollup.Bucket's buckets.
	Latency map[int]int64
	// LatencyMicros sums the calls' latencies, µs.
	LatencyMicros int64
	// WaitedMicros and HeldMicros sum the time the calls waited for a
	// pool's connection and then held one, µs (0: no pool is known, as in
	// gateway mode).
	WaitedMicros, HeldMicros int64
	// Pools holds, per instance, the connections its pool had for this
	// queue's calls: its size less what other queues' calls held; Queued,
	// per instance, this queue's calls waiting for one when it last
	// handed its samples over. The windows of every instance sum them.
	Pools, Queued map[string]int64
}

// Add counts one call in the sample: its latency, and how long it waited
// for a pool's connection and held one (0: none, or not known).
func (s *RateSample) Add(took, waited, held time.Duration, overloaded bool) {
	s.Calls++
	if overloaded {
		s.Overloaded++
	}
	if s.Latency == nil {
		s.Latency = map[int]int64{}
	}
	s.Latency[rollup.Bucket(float64(took)/float64(time.Millisecond))]++
	s.LatencyMicros += took.Microseconds()
	s.WaitedMicros += waited.Microseconds()
	s.HeldMicros += held.Microseconds()
}

// RateWindow is what FoldRate answers: whether this call claimed the
// decision on a finished window, and if so that window's samples from
// every instance, the rate in force and the users waiting.
type RateWindow struct {
	Claimed bool
	// ID numbers the window claimed (store time / window length); SetRate
	// takes it. Folded is the window this call's samples joined.
	ID, Folded int64
	Samples    RateSample
	// Span is how long the samples were gathered: a window, or more where
	// windows with too few calls were merged into the next.
	Span    time.Duration
	Rate    float64
	Waiting int64
	// Admitted counts the users admitted from the window's start to its
	// claim.
	Admitted int64
	// Last is the last decision written (SetRate).
	Last RateDecision
}

// RateDecision is one decision of the adaptive rate, as the store keeps
// the last one: the rate, and what the next decision needs to remember.
// The stores keep what is remembered as they are given it (JSON), without
// reading it.
type RateDecision struct {
	// Window is the window decided on (RateWindow.ID).
	Window int64   `json:"window"`
	Rate   float64 `json:"rate"`
	// Kind is what the decision did, for the next decision to go by; Why
	// says why in words, for people only (logs, the admin page).
	Kind string `json:"kind,omitempty"` // one of admission's Rate… kinds
	Why  string `json:"why,omitempty"`
	// P90 is the latency the decision stood on.
	P90 time.Duration `json:"p90,omitempty"`
	// Capacity is the protected calls a second the backend bears, as last
	// measured (0: not known yet); Share, the share of it the rate aims at
	// (0: not found yet), found by Waited: what calls waited for a pool's
	// connection, as a share of their hold, smoothed over windows.
	Capacity float64 `json:"capacity,omitempty"`
	Share    float64 `json:"share,omitempty"`
	Waited   float64 `json:"waited,omitempty"`
	// CallsPerUser is how many protected calls an admitted user makes,
	// measured while the rate held steady (0: not yet known).
	CallsPerUser float64 `json:"callsPerUser,omitempty"`
	// Steady is the first window decided at the rate in force (within 5%).
	Steady int64 `json:"steady,omitempty"`
	// Base is the backend's latency with nothing queued in front of it,
	// where no pool measures its service time (gateway mode), and BaseAt
	// the window it was measured on.
	Base   time.Duration `json:"base,omitempty"`
	BaseAt int64         `json:"baseAt,omitempty"`
}

// RateChange is one change of the adaptive rate, for the admin chart.
type RateChange struct {
	At   time.Time
	Rate float64
	Why  string
}

// Opening is what OpenDue answers about a queue's pre-queue.
type Opening struct {
	// Due: the pre-queue is closed (later arrivals join the line behind the
	// tickets reserved for it) and this caller holds the lease to place
	// Pending: the users of the pre-queue when it closed, whether or not
	// they left (or were placed) since, in arrival order. They are the
	// draw's participants, fixed at the close: the draw may be made much
	// later (its beacon's round waited for), and who leaves meanwhile
	// must not choose among the orders (Place leaves a leaver's ticket a
	// gap).
	Due     bool
	Pending []string
	// In is how long until the opening is due (not Due, and one pending).
	In time.Duration
	// Busy: another instance holds the lease to place it.
	Busy bool
	// OpensAt is the opening's instant (Config.OpensAt as the store holds
	// it), while Due: the commitment its draw uses is the one to it.
	OpensAt time.Time
	// Epoch is the queue's life (Snapshot.Epoch), while Due: a
	// commitment made in another life is not this opening's.
	Epoch int64
	// First is the first of the tickets reserved when the pre-queue closed,
	// one for each of its users, and Next the first not yet placed (Place
	// goes on from it); while Due.
	First, Next int64
}

// Store holds the line and the tokens. Each method is one atomic step in the
// store (a Lua script on Redis, one critical section in memory), so no
// request can slip between a check and its act. Its readers take only the
// part they need: what requests and operators change (Line), what the
// loops beside them do (loops), and reading without changing (Inspector).
type Store interface {
	line
	lanes
	loops
	Inspector
}

// lanes is what a store does for a queue's lanes and access codes (issue
// 53). A non-Public lane is a line of its own, its tickets from the one
// counter every lane shares (so they are gaps in the public line, as
// leavers are, and Snapshot and the front document stay the public
// lane's); a person's position is their rank in their lane.
type lanes interface {
	// Join is Enter in a lane: j.Lane (the lane the person's claims give;
	// "" is lane.Public), or by redeeming the access code whose hash is
	// j.Code, which then names the lane. Everything Enter answers, it
	// answers alike (a place already held is kept and answered, and a code
	// is then not used), with these for a code: a code the queue does not
	// hold, or expired, accesscode.ErrInvalid; one with no redemption left,
	// accesscode.ErrUsed. A code redeemed by someone waiting in another
	// lane moves them to the back of the code's lane (a new ticket), so
	// nobody's position rises. The redemption and the place it gives are
	// one atomic step: of any number of concurrent redemptions of a
	// single-use code, on any number of instances, exactly one succeeds.
	// Into an opening's pre-queue, the lane goes with the person and the
	// opening places them in it; before the pre-queue closes a code may
	// change that lane (nobody has a position yet), but while the opening
	// is being placed a code redeemed in the pre-queue is answered with
	// the person's standing and not used (the unplaced of a lane count in
	// its positions, which must not rise): once placed, it moves them to
	// the back of its lane as anyone waiting. A code whose lane is not in
	// force now (Config.InForce) is accesscode.ErrInvalid and not used.
	Join(ctx context.Context, queue, user string, j lane.Join) (Standing, error)
	// AddCodes keeps codes for the queue (ErrQueueNotFound without it);
	// a code whose hash is held already is a duplicate and left as it is.
	// An upload holding a code accesscode.Code.Check refuses (no lane,
	// uses outside 1 to accesscode.MaxUses) is refused whole, with that
	// error (accesscode.ErrMalformed), and nothing kept.
	AddCodes(ctx context.Context, queue string, codes []accesscode.Code) (accesscode.Added, error)
}

// Line is what requests do to a queue: an operator's config, a user's
// place, status and entry token.
type line interface {
	// PutConfig creates the queue or replaces its config.
	PutConfig(ctx context.Context, queue string, c Config) error
	// DeleteQueue removes the queue with everyone in it and every token
	// it gave; a queue of that name created later starts empty. A queue
	// that does not exist is not an error.
	DeleteQueue(ctx context.Context, queue string) error
	// Enter: a valid token → Ready; already in line → the same position;
	// line at capacity → ErrQueueFull; sold out (Stock.SoldOut) →
	// ErrSoldOut; else take the next ticket and join.
	Enter(ctx context.Context, queue, user string) (Standing, error)
	// Status reads the user's standing without changing it.
	Status(ctx context.Context, queue, user string) (Standing, error)
	// Leave removes the user from the line, or gives back an unused token.
	// It reports whether anything was removed.
	Leave(ctx context.Context, queue, user string) (bool, error)
	// AdmitNow lets the user in at once while the line is quiet: nobody
	// waits, the queue is not paused, the next tick's budget has room (what
	// is admitted this way comes out of that tick's quota, so the global
	// rate holds) and so has the live-token cap. Then token is written for
	// the user with the queue's TTL and they are Ready. A user in line gets
	// their place (Waiting), one holding a valid token gets it (Ready);
	// otherwise NotInQueue: the line is busy, join it.
	AdmitNow(ctx context.Context, queue, user, token string) (Standing, error)
	// Seen marks users still in line as present now (AbandonAfter), as
	// pages that said they were hidden (AbandonAfterHidden) or, with
	// hidden false, visible: a later mark replaces an earlier one, flag
	// and all, but for a visible mark within admission.HiddenHolds of a
	// hidden one, which keeps it hidden. A user not in line is not marked.
	Seen(ctx context.Context, queue string, users []string, hidden bool) error
	// Snapshot reads the line's head, last ticket, length, the tickets
	// that left above the head (at most SnapshotMaxLeft) and the config, in
	// one step.
	Snapshot(ctx context.Context, queue string) (Snapshot, error)
	// BeginUse checks the user's token (ErrTokenInvalid) and takes a short
	// in-flight lock on it for owner (ErrTokenInUse while another owner
	// holds it). Asking again as the same owner succeeds, so a retried call
	// whose first reply was lost does not lock its own caller out.
	BeginUse(ctx context.Context, queue, user, token, owner string, lock time.Duration) error
	// EndUse releases the lock if owner holds it; consumed=true also deletes
	// the token, but only if it is still this token (compare-and-delete).
	EndUse(ctx context.Context, queue, user, token, owner string, consumed bool) error
	// Extend is one successful use of the user's token on a session route:
	// ErrTokenInvalid unless it is theirs and live; with the queue's
	// SessionMax set, its expiry moves to TokenTTL from now, never past
	// SessionMax after it was issued (its first expiry less TokenTTL, as
	// the first Extend reads it) and never earlier than it was. It answers
	// the token's expiry.
	Extend(ctx context.Context, queue, user, token string) (time.Time, error)
	// SetStock tells the queue what it has left to sell. With onlyLower
	// it is a sale's count, which may arrive after a later sale's: it
	// lowers a known count and never raises it. It answers the stock now.
	SetStock(ctx context.Context, queue string, s Stock, onlyLower bool) (Stock, error)
	// EnterShadow is Enter for a suspect: a user already in the real line,
	// or READY, is told so as by Enter; otherwise the place is taken in the
	// shadow line (its own tickets and ShadowCapacity: ErrQueueFull beyond
	// it), keeping mark and the real line's last ticket (Suspect.Behind).
	// Sold out, closed and an opening ahead answer as for a person.
	EnterShadow(ctx context.Context, queue, user string, mark suspect.Mark) (Standing, error)
	// Suspects lists up to limit places of the shadow line, in its order.
	Suspects(ctx context.Context, queue string, limit int) ([]suspect.Place, error)
	// ClearSuspect moves the shadow line's place numbered ticket into the
	// real line where a person arriving when it did would stand (just
	// behind Suspect.Behind, or first if that ticket has been let in), its
	// time in line kept; while an opening is ahead, into its pre-queue as
	// one arriving now, and while one is placed, behind its last reserved
	// ticket. It reports whether the place was found.
	ClearSuspect(ctx context.Context, queue string, ticket int64) (bool, error)
	// PutHandoff keeps codeHash (handoff.Hash of a link's code) for ttl
	// as the way to carry user's place to another session (issue 55),
	// and answers when it lapses: only while user holds a place (in the
	// line, a lane, the shadow line, an opening's pre-queue before it
	// closes) or a live token, else handoff.ErrNoPlace. A user may hold
	// several codes at once: the first claimed carries the place, and the
	// others are then gone.
	PutHandoff(ctx context.Context, queue, user, codeHash string, ttl time.Duration) (time.Time, error)
	// ClaimHandoff moves the place codeHash was kept for to user, in one
	// atomic step, and answers whose it was (from) and user's standing
	// now. The code must be kept and unexpired, else handoff.ErrGone; it
	// is then deleted (single use). A user holding a place or a live
	// token is handoff.ErrAlreadyInLine, with nothing changed (the code
	// kept). A place whose token a request is using (BeginUse's lock) is
	// ErrTokenInUse, nothing changed: the order under way must not spend
	// a token that changed hands. Otherwise everything of the place moves
	// to user as it was: its ticket and score (so its position, its lane,
	// the shadow line or the pre-queue), when it was taken and the wait
	// shown, its seen mark, a suspect's mark, a READY entry's token with
	// its expiry and sliding session; from is told Moved (Status) for the
	// longer of handoff.MovedFor and the queue's token lifetime, unless
	// they take a place again (Enter takes a fresh one at the back).
	ClaimHandoff(ctx context.Context, queue, codeHash, user string) (from string, e Standing, err error)
	// FirstUse records key (a one-time thing of the queue, such as a solved
	// challenge) for ttl and reports whether this was its first use: of
	// any number of concurrent calls with one key, exactly one gets true
	// until ttl passes. The queue need not exist.
	FirstUse(ctx context.Context, queue, key string, ttl time.Duration) (bool, error)
}

// loops is what the loops beside the requests do: admission (package
// admission's Admitter), its janitor, the opening, the adaptive rate
// (RateController).
type loops interface {
	// Admit runs one admission tick if one is due: it pops up to the tick's
	// budget in line order and writes tokens[i] for the i-th popped user with
	// the queue's TTL. len(tokens) should be the batch size; with fewer, the
	// users due beyond them wait for the next tick. With AbandonAfter, a
	// user not Seen for that long is skipped instead (out of line, no
	// token) and the tick fills its budget from those behind. While an
	// opening is being placed it admits nobody.
	Admit(ctx context.Context, queue string, tokens []string) (Admission, error)
	// Sweep is the janitor's step, kept out of admission's hot path: it
	// forgets tokens whose time is up (counting them expired), lapsed
	// in-flight locks and leavers below the line's head, a bounded amount
	// per call, and reports whether more may be left to sweep. Nothing
	// else waits for it: every other step reads expiry itself.
	Sweep(ctx context.Context, queue string) (more bool, err error)
	// OpenDue checks the queue's opening by the store's clock; when due it
	// closes the pre-queue and gives owner the lease (for lease) to place
	// it (Place).
	OpenDue(ctx context.Context, queue, owner string, lease time.Duration) (Opening, error)
	// Place puts users (a due opening's, in the order drawn) in line:
	// users[i] at the reserved ticket first+i, where first is the
	// opening's Next (else ErrNotOwner: another call placed them). A
	// user no longer in the pre-queue ("" for one the caller cannot name)
	// left it: their ticket stays a gap. Once the pre-queue is empty the
	// opening is done (true), the reserved tickets left over gaps too.
	// ErrNotOwner: the lease is gone.
	Place(ctx context.Context, queue, owner string, first int64, users []string, lease time.Duration) (bool, error)
	// CommitDraw keeps c (draw.NewCommitted) as the commitment to the
	// queue's opening at c.OpensAt while that opening (Config.OpensAt) is
	// ahead or being placed and not yet drawn; false, with nothing
	// written, when there is no such opening. The newest commitment is
	// kept instead, and answered, when it is pending for the same opening,
	// beacon and life of the queue (Snapshot.Epoch, which the store sets
	// in c); a pending one it replaces is withdrawn. MadeAt, WithdrawnAt
	// are the store's clock. The ledger is kept apart from the queue:
	// DeleteQueue leaves it.
	CommitDraw(ctx context.Context, queue string, c draw.Committed) (draw.Committed, bool, error)
	// SaveDraw keeps r, the draw of the commitment r.Commitment (pending),
	// under owner's lease on the opening (ErrNotOwner), and marks the
	// commitment drawn. Once a record is kept for a commitment it is the
	// one: a later call (an instance that took the lease over) is answered
	// it, unchanged.
	SaveDraw(ctx context.Context, queue, owner string, r draw.Record) (draw.Record, error)
	// FoldRate adds one instance's samples to the current window of the
	// adaptive rate; the first call after a window ends claims the
	// decision on it (RateWindow.Claimed), once for all instances. With
	// the rate not adaptive the samples are dropped.
	FoldRate(ctx context.Context, queue string, s RateSample, window time.Duration) (RateWindow, error)
	// Roll applies w to the queue's row of the minute the store's clock is
	// in (rollup.Write), kept for w.Keep after. The queue need not exist:
	// rows outlive it, until their time is up.
	Roll(ctx context.Context, queue string, w rollup.Write) error
	// SetRate sets the adaptive rate decided on window d.Window, within
	// the queue's bounds, and keeps d for the next decision, unless the
	// rate is no longer adaptive or a later window was decided; it reports
	// the rate before and whether it wrote.
	SetRate(ctx context.Context, queue string, d RateDecision) (before float64, ok bool, err error)
}

// Inspector reads the queues without changing anything: for operators,
// metrics and readiness.
type Inspector interface {
	// Config returns ErrQueueNotFound for an unknown queue.
	Config(ctx context.Context, queue string) (Config, error)
	// Queues lists every queue's name.
	Queues(ctx context.Context) ([]string, error)
	// Stats reads the operator's numbers for a queue, all at one instant:
	// its Changed with the Config and Stock they stamp (package events
	// names a change by its stamp and tells it by the state it finds).
	Stats(ctx context.Context, queue string) (Stats, error)
	// RateChanges lists the admission rate's recent changes, oldest first.
	RateChanges(ctx context.Context, queue string) ([]RateChange, error)
	// Rollups reads the queue's rows of the minutes from since to until
	// (both included) that are kept, oldest first.
	Rollups(ctx context.Context, queue string, since, until time.Time) ([]rollup.Row, error)
	// Draws lists the queue's draw commitments, oldest first, seeds
	// included: a caller publishes a seed only once its commitment is
	// drawn. None for a queue that never had an opening.
	Draws(ctx context.Context, queue string) ([]draw.Committed, error)
	// DrawRecord reads the record kept for a commitment (false: none).
	DrawRecord(ctx context.Context, queue, commitment string) (draw.Record, bool, error)
	// Ping reports whether the store answers (readiness).
	Ping(ctx context.Context) error
}

// tokenBytes is the entropy of an entry token: 128 bits.
const tokenBytes = 16

// NewTokens returns n random entry tokens (128 bits each, base64url).
func NewTokens(n int) []string {
	buf := make([]byte, n*tokenBytes)
	rand.Read(buf) // never fails (crypto/rand panics rather than return a weak value)
	out := make([]string, n)
	for i := range out {
		out[i] = base64.RawURLEncoding.EncodeToString(buf[i*tokenBytes : (i+1)*tokenBytes])
	}
	return out
}
