package staff

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxAuditLimit is the most entries one read of the audit log answers
// (Filter.Limit 0 or above it reads this many).
const MaxAuditLimit = 1000

// Auditor keeps the audit log: each change made, and each attempt
// refused (rate-limited), in the store for the report's retention, and
// tells each entry kept to whoever listens (the webhook admin.changed). A
// trouble of the log's own never fails the change it records: it is
// logged and counted (Failed).
type Auditor struct {
	store  AuditStore
	keep   time.Duration
	clock  func() time.Time
	logger *slog.Logger

	mu      sync.Mutex
	refused refusalLimiter
	tell    func(Entry)
	// untold are the entries kept before Tell (the queues file's load at
	// start), told once it is; at most maxUntold.
	untold []Entry

	suppressed, failed atomic.Int64
}

// AuditorOptions configure NewAuditor.
type AuditorOptions struct {
	Store AuditStore
	// Keep is how long an entry is kept (--rollup-retention).
	Keep time.Duration
	// Clock stamps entries (time.Now when nil).
	Clock  func() time.Time
	Logger *slog.Logger
}

// NewAuditor returns the auditor keeping its entries in o.Store.
func NewAuditor(o AuditorOptions) *Auditor {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Auditor{store: o.Store, keep: o.Keep, clock: o.Clock, logger: o.Logger, refused: newRefusalLimiter()}
}

// Tell has f hear each entry kept (the webhook admin.changed): those kept
// before, at once, then each as it is kept. It is set once the shop's
// events are built, after the queues file's first load.
func (a *Auditor) Tell(f func(Entry)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tell = f
	for _, e := range a.untold {
		f(e)
	}
	a.untold = nil
}

// maxUntold bounds the entries kept before Tell.
const maxUntold = 1000

// told tells e, or keeps it until Tell.
func (a *Auditor) told(e Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.tell != nil:
		a.tell(e)
	case len(a.untold) < maxUntold:
		a.untold = append(a.untold, e)
	}
}

// Suppressed counts the refusals not logged (rate-limited), Failed the
// entries the store did not keep: both for the metrics.
func (a *Auditor) Suppressed() int64 { return a.suppressed.Load() }

// Failed counts the entries the store did not keep.
func (a *Auditor) Failed() int64 { return a.failed.Load() }

// Record keeps e (httpapi.Auditor): its time and actor are filled from
// the auditor's clock and ctx's actor (ActorOf) when unset, its outcome is
// Done when unset, and a secret that slipped into a change is scrubbed.
// A nil Auditor keeps nothing.
func (a *Auditor) Record(ctx context.Context, e Entry) {
	if a == nil {
		return
	}
	if e.At.IsZero() {
		e.At = a.clock()
	}
	e.At = e.At.UTC().Truncate(time.Millisecond)
	if e.Actor.Kind == "" {
		e.Actor, _ = ActorOf(ctx)
	}
	if e.Actor.Kind == "" {
		e.Actor.Kind = KindNobody
	}
	if e.Outcome == "" {
		e.Outcome = Done
	}
	if e.Outcome == Refused {
		repeats, log := a.admitRefusal(e.Actor, e.At)
		if !log {
			return
		}
		e.Repeats = repeats
	}
	for i := range e.Changes {
		e.Changes[i].Before, e.Changes[i].After = Scrub(e.Changes[i].Before), Scrub(e.Changes[i].After)
	}
	// The change was made: its record outlives a request cancelled since.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	kept, err := a.store.Append(ctx, e, a.keep)
	if err != nil {
		a.failed.Add(1)
		a.logger.Error("the audit log did not keep an entry (the change itself was made)",
			"op", e.Op, "queue", e.Queue, "actor", e.Actor.Label(), "err", err)
		return
	}
	a.told(kept)
}

// admitRefusal says whether a refusal by actor at at is logged, and how
// many like it were not since the last that was (refusalLimiter).
func (a *Auditor) admitRefusal(actor Actor, at time.Time) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	repeats, log := a.refused.admit(actor, at)
	if !log {
		a.suppressed.Add(1)
	}
	return repeats, log
}

// Scrub is v with the credentials a URL may carry (its user and password,
// its query) taken out of every string in it that is a URL, however deep:
// a setting that carries one (a webhook's address) never puts its secret
// in the log.
func Scrub(v any) any {
	switch v := v.(type) {
	case string:
		return scrubURL(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = Scrub(x)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(v))
		for k, x := range v {
			out[k] = scrubURL(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = Scrub(x)
		}
		return out
	}
	return v
}

func scrubURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Scheme == "" || u.Host == "" {
		// Not a URL we can read: it is kept only when nothing in it could
		// be a credential.
		if strings.ContainsAny(s, "@?") {
			return "(changed)"
		}
		return s
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// Matches reports whether f selects e (its queue, its actor, its time;
// not its limit).
func (f Filter) Matches(e Entry) bool {
	if f.Queue != "" && e.Queue != f.Queue {
		return false
	}
	if !f.Since.IsZero() && e.At.Before(f.Since) || !f.Until.IsZero() && e.At.After(f.Until) {
		return false
	}
	if f.Actor == "" {
		return true
	}
	want := strings.ToLower(f.Actor)
	for _, s := range []string{e.Actor.Label(), e.Actor.Subject, e.Actor.Name} {
		if s != "" && strings.Contains(strings.ToLower(s), want) {
			return true
		}
	}
	return false
}

// Most is how many entries a store answers for f: its Limit, or
// MaxAuditLimit when unset or above it.
func (f Filter) Most() int {
	if f.Limit <= 0 || f.Limit > MaxAuditLimit {
		return MaxAuditLimit
	}
	return f.Limit
}

type opKey struct{}

// WithOp is ctx carrying op, what the call is (Entry.Op): the admin API
// names its operation by method and route, the queues file "load" or
// "reload", the backend its command. The calls it reaches record it.
func WithOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

// OpOf is the op ctx carries ("" for none).
func OpOf(ctx context.Context) string {
	op, _ := ctx.Value(opKey{}).(string)
	return op
}
