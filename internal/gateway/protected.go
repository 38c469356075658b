package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/breaker"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/spend"
)

// protected serves a protected route: with a valid entry, forward it under
// the token rules; without one, let the user straight in if the line is
// quiet and the queue's join policy allows it, or send them to the line.
// A request that backends may read as two different protected routes is
// answered as any other without an entry, and refused where it would be
// forwarded: the entry was checked for one route, the backend may run the
// other.
func (g *Gateway) protected(w *statusRecorder, r *http.Request, v verdict, on onward) {
	rt := v.route
	if g.passes(w, r, rt, on) {
		return
	}
	ambiguous := func() bool {
		if v.other == "" {
			return false
		}
		g.o.API.WriteError(w, r, fmt.Errorf("%w: %q and %q; send the plain path and method of the one you mean", ErrAmbiguousRoute, rt.Pattern, v.other))
		return true
	}
	caller, err := g.o.Identity.Caller(r)
	if err != nil {
		if !errors.Is(err, identity.ErrUnauthenticated) || !wantsHTML(r) {
			g.o.API.WriteError(w, r, err)
			return
		}
		// A browser's first visit: the anonymous session the waiting page
		// would give it (within the address's share of new sessions), so a
		// quiet line can let it straight through where the policy allows.
		if err := g.o.Gate.NewSession(g.o.Gate.Address(r)); err != nil {
			g.o.API.WriteError(w, r, err)
			return
		}
		var value string
		caller.User, value = g.o.Identity.NewSession()
		http.SetCookie(w, g.o.Identity.Cookie(r, value))
	}
	user := caller.User
	if token := entryToken(r, rt.Queue); token != "" {
		if ambiguous() {
			return
		}
		err := g.forward(w, r, on, rt, user, token)
		if err == nil {
			return
		}
		if !errors.Is(err, queue.ErrTokenInvalid) {
			g.storeFailed(w, r, rt, on, err)
			return
		}
	}
	// No valid entry. A quiet line lets the user straight in, if the
	// queue's policy lets them in without the waiting page (an anonymous
	// session under "challenge" solves its challenge there).
	may, err := g.o.Gate.MayAdmitNow(r.Context(), rt.Queue, g.o.Gate.Entrant(r, caller))
	if err != nil {
		g.storeFailed(w, r, rt, on, err)
		return
	}
	if !may {
		g.sendToLine(w, r, rt)
		return
	}
	if ambiguous() {
		return
	}
	admitted, err := g.o.Queue.AdmitNow(r.Context(), rt.Queue, user)
	if err != nil {
		g.storeFailed(w, r, rt, on, err)
		return
	}
	if admitted.State == queue.Ready {
		http.SetCookie(w, g.entryCookie(r, rt.Queue, admitted.Token, admitted.ExpiresAt))
		if err := g.forward(w, r, on, rt, user, admitted.Token); err != nil {
			g.o.API.WriteError(w, r, err)
		}
		return
	}
	g.sendToLine(w, r, rt)
}

// passes forwards a protected request that needs no entry, and reports
// whether it did: one a --bypass rule lets through (staff, a monitor:
// no entry, no token spent, nothing the admission rate follows), or under
// --on-store-error admit one whose queue's store is away (its breaker
// open: no call to it would answer before its timeout, so nothing is
// asked of it); under wait such a request is answered 503 at once.
func (g *Gateway) passes(w *statusRecorder, r *http.Request, rt Route, on onward) bool {
	if rule, ok := g.o.Bypass.Match(r, rt.Queue); ok {
		g.o.Metrics.Bypassed(rule)
		on.pass(w, r, judgment{bypass: rule})
		return true
	}
	if g.o.Degraded.AdmitNow(rt.Queue) {
		g.forwardDegraded(w, r, rt, on)
		return true
	}
	if g.o.Degraded.RefuseNow(rt.Queue) {
		g.o.API.WriteError(w, r, breaker.ErrOpen)
		return true
	}
	return false
}

// storeFailed answers a protected request that was not forwarded because
// of err: when the store failed under --on-store-error admit it is
// forwarded degraded after all, else err is the answer (the store's
// failure: 503 + Retry-After).
func (g *Gateway) storeFailed(w *statusRecorder, r *http.Request, rt Route, on onward, err error) {
	if g.o.Degraded.Admits() && errors.Is(err, queue.ErrUnavailable) {
		g.forwardDegraded(w, r, rt, on)
		return
	}
	g.o.API.WriteError(w, r, err)
}

// forwardDegraded forwards a protected request without an entry, marked
// X-Waitroom-Degraded (--on-store-error admit): no token is asked for or
// spent, and the backend gets neither X-Waitroom-User nor
// X-Waitroom-Entry. It is counted, not logged: the breaker logs the
// outage once. A likely bot (the signals judged without the store:
// gatekeeper.Gatekeeper.DegradedRefusal) is not forwarded: it is answered
// as under wait, 503 + Retry-After.
func (g *Gateway) forwardDegraded(w *statusRecorder, r *http.Request, rt Route, on onward) {
	caller, err := g.o.Identity.Caller(r)
	if err != nil { // none: judged by address and score alone
		caller = identity.Caller{}
	}
	if err := g.o.Gate.DegradedRefusal(r.Context(), rt.Queue, g.o.Gate.Entrant(r, caller), true); err != nil {
		g.o.API.WriteError(w, r, err)
		return
	}
	g.o.Metrics.Degraded("gateway")
	on.pass(w, r, judgment{degraded: true})
}

// forward sends a request with a valid entry upstream: as a use of the
// token (consumed on 2xx, kept otherwise) on a --protect route, as a mere
// check on a --protect-session route; an upstream answering
// X-Waitroom-Command: release ends the entry at once, whatever its status.
// It returns an error only when the request was not forwarded (the token
// invalid or in use, the store down).
func (g *Gateway) forward(w *statusRecorder, r *http.Request, on onward, rt Route, user, token string) error {
	header, err := g.o.Signer.Sign(Entry{Issuer: g.o.EntryIssuer, Audience: g.o.EntryAudience, User: user,
		Queue: rt.Queue, Route: rt.Pattern, ID: EntryID(rt.Queue, user, token)}, time.Now())
	if err != nil {
		return err
	}
	t := spend.Token{Queue: rt.Queue, User: user, Value: token}
	u := &entryUse{user: user, header: header, token: t}
	var aborted any
	call := func(context.Context) (o spend.Outcome) {
		// The proxy aborts the connection with a panic when the answer
		// breaks off after its status went out: the client did not get it
		// whole, so the token is kept whatever the status said; then the
		// panic goes on.
		defer func() {
			if v := recover(); v != nil {
				aborted, o = v, spend.Failed
			}
		}()
		on.pass(w, r, judgment{entry: u})
		if r.Header.Get("Upgrade") == "" { // an upgraded connection is the backend's
			if err := http.NewResponseController(w).Flush(); err != nil {
				return spend.Failed // the end of the answer did not reach the client
			}
		}
		return outcomeOf(u, w.status)
	}
	if rt.Consume {
		err = g.o.Guard.Use(r.Context(), t, call)
	} else {
		err = g.o.Guard.Check(r.Context(), t, call)
	}
	if aborted != nil {
		panic(aborted)
	}
	return err
}

// outcomeOf reads how a forwarded call ended: the failure the proxy met,
// else the upstream's status (2xx succeeded, 5xx failed, else refused).
func outcomeOf(u *entryUse, status int) spend.Outcome {
	switch {
	case u.failed:
		return u.failure
	case status >= 200 && status < 300:
		return spend.Succeeded
	case status >= 500:
		return spend.Failed
	}
	return spend.Refused
}

// sendToLine answers a request without an entry while the line is busy: a
// browser goes to the waiting page (and comes back here once admitted), an
// API client is told where to join.
func (g *Gateway) sendToLine(w http.ResponseWriter, r *http.Request, rt Route) {
	if wantsHTML(r) {
		page := g.o.Prefix + "/q/" + rt.Queue + "?return=" + url.QueryEscape(r.URL.RequestURI())
		http.Redirect(w, r, page, http.StatusSeeOther)
		return
	}
	g.o.API.WriteError(w, r, entryRequired{entries: g.o.Prefix + "/api/v1/queues/" + rt.Queue + "/entries"})
}

// entryRequired is the 403 of a protected route: no valid entry, and where
// to get one.
type entryRequired struct{ entries string }

func (e entryRequired) Error() string {
	return "this route needs an entry: join the line at POST " + e.entries + ", then send the token as X-Entry-Token"
}

func (e entryRequired) Unwrap() error { return queue.ErrTokenInvalid }

func (e entryRequired) Details() map[string]string { return map[string]string{"entriesUrl": e.entries} }

// wantsHTML tells a browser navigating from an API client.
func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}
