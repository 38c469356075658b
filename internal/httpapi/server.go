// Package httpapi is waitroom's HTTP contract (DESIGN.md §3): the queue
// routes users poll, the order API the line protects, the admin routes,
// health probes and the page. It translates between JSON and the domain
// (queue, order) and maps domain errors to statuses in one table.
package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/bypass"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/front"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/queue/watch"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/telemetry"
	"github.com/waitroom/waitroom/internal/web"
)

// maxBody bounds every JSON body but a queue's settings and an upload of
// access codes (maxCodesBody); a larger one is refused before parsing.
const maxBody = 4 << 10

// maxSettingsBody bounds a queue's settings (PUT, PATCH): a message may be
// 500 characters in each of 20 languages.
const maxSettingsBody = 64 << 10

// Options configures a Server.
type Options struct {
	Queue *queue.Service
	// Operate makes the admin routes' calls (configs, stats, stock,
	// rollups, the list of queues).
	Operate *operate.Operator
	// Orders serves the order API and the admin's products (nil: neither,
	// as in gateway mode, where the shop's own backend sells).
	Orders *order.Service
	// History serves each queue's recent samples to the admin page (nil:
	// an empty history).
	History *watch.History
	// Identity checks JWTs and signs session cookies.
	Identity *identity.Identity
	// Tickets signs the ticket the enter and status answers carry, which
	// the page reads its place by from the front document (nil: answers
	// carry none, and a ticket sent back is not checked).
	Tickets *front.Tickets
	// Gate decides who may take a place and hands out challenges and new
	// sessions within the per-address limits.
	Gate *gatekeeper.Gatekeeper
	// Bypass lets staff and monitors past the line (--bypass; nil:
	// nobody): enter and status answer them READY at once, and the order
	// API takes their orders without spending an entry token.
	Bypass *bypass.Rules
	// Degraded is --on-store-error (nil: wait): under admit, enter and
	// status answer a degraded READY while the queue's store is away.
	Degraded *degraded.Policy
	// AdminToken guards /admin; empty disables the admin API.
	AdminToken string
	// Audit hears every change made through the admin API and every
	// refused attempt at one (issue 56; nil: none is kept).
	Audit Auditor
	// AdminSessions knows the admin page's signed-in sessions (issue 56,
	// OpenID Connect; nil: no sign-in, bearer tokens only).
	AdminSessions SessionAuth
	// AdminSignIn serves the admin page's sign-in through the shop's
	// identity provider (/admin/sso/…; nil: none, the routes answer 404).
	AdminSignIn AdminSignIn
	// Tokens checks, makes and revokes the named tokens (issue 56; nil:
	// none are kept, and only --admin-token and sessions sign in).
	Tokens *staff.Checker
	// Addresses finds a request's client address behind the trusted
	// proxies: the address an admin actor acted from.
	Addresses clientaddr.Resolver
	// AuditLog reads the audit log for GET /admin/v1/audit (nil: none is
	// kept, and the list is empty).
	AuditLog AuditLog
	// Ready says whether this instance can do its job (for /readyz) and
	// what it knows of the parts it depends on, for the answer's body. An
	// error is a 503: one wrapping ErrNotReady says why although the
	// dependencies answer. strict (?strict=1) asks for the all-or-nothing
	// answer: ready only while every part is whole.
	Ready func(ctx context.Context, strict bool) (Readiness, error)
	// Page serves the waiting page of GET / and /q/{queue} (after the
	// session cookie is set) and its twin without JavaScript
	// (/q/{queue}/noscript), and also GET /static/…, /assets/custom/… and
	// /admin, the files and the admin page that come with it; nil answers
	// 404 (an API-only server).
	Page   *web.Site
	Logger *slog.Logger
	// NewQueueConfig is what PUT starts from for fields it leaves out.
	NewQueueConfig queue.Config
	// QueueConfigChanged hears of every queue config the admin API stored
	// (PUT or PATCH), after it was stored (nil: nobody): the queues file
	// compares it with its own (drift).
	QueueConfigChanged func(ctx context.Context, queue string, c queue.Config)
	// Reports reads a queue's per-minute figures for its report (nil: none
	// are kept, and the report says that nothing was recorded).
	Reports report.Source
	// Draws is where each queue's draws are read, for GET
	// /api/v1/queues/{queue}/draw, the front document and the schedule
	// (nil: none are kept, and every queue's list is empty).
	Draws DrawLedger
	// Handoffs keeps the codes of links that carry a place to another
	// session (issue 55; nil: no handoffs, their routes answer 404).
	Handoffs HandoffStore
	// Participants gives a person waiting for an opening their participant
	// id and salt in its draw, in the enter and status answers (nil: not
	// shown); the admitter's, so that the id is the one drawn.
	Participants *draw.Participants
	// OpenAPI is the contract served at GET /openapi.yaml (nil: not served).
	OpenAPI []byte
	// Metrics records per-instance series (nil records nothing);
	// MetricsHandler serves GET /metrics when set.
	Metrics        *telemetry.Metrics
	MetricsHandler http.Handler
}

// Auditor keeps the audit log (package staff): who changed what, and who
// was refused.
type Auditor interface {
	// Record keeps e; a refusal (staff.Refused) may be only counted, so
	// that refusals cannot flood the log. It never fails the request: the
	// log's own trouble is its own to report.
	Record(ctx context.Context, e staff.Entry)
}

// SessionAuth tells who signed in to the admin page sent a request.
type SessionAuth interface {
	// Actor answers the actor whose session r's cookie holds (false: r
	// carries no session cookie). A request that changes something (any
	// method but GET and HEAD) must also carry the session's CSRF guard,
	// and a session that is unknown or expired is an error: both are
	// refused as credentials that name nobody.
	Actor(r *http.Request) (staff.Actor, bool, error)
}

// Server is the HTTP API.
type Server struct {
	Options
	logger *slog.Logger
	errLog *errorLog
	mux    *http.ServeMux
	// roles are the admin routes' roles, as the contract declares them
	// (RouteRole).
	roles map[string]staff.Role

	// fronts holds each queue's front document, built at most once a
	// tick.
	fronts *frontCache
	// draws holds each queue's draw ledger, read at most once a second.
	draws *drawCache

	// held bounds the status requests held open at once (waitSeconds);
	// beyond it they are answered at once, as without waitSeconds.
	held chan struct{}
	// drained is closed when draining starts, so held requests answer now.
	drainMu sync.Mutex
	drained chan struct{}
}

// maxHeld bounds the status requests one instance holds open at once. Only
// users near the front are held, so this is far above what a queue needs.
const maxHeld = 10_000

// New builds the Server and its routes.
func New(o Options) *Server {
	s := &Server{Options: o, logger: o.Logger, errLog: newErrorLog(o.Logger), mux: http.NewServeMux(),
		held: make(chan struct{}, maxHeld), drained: make(chan struct{})}
	s.roles = routeRoles(o.OpenAPI)
	s.draws = newDrawCache(o.Draws, o.Logger)
	s.fronts = newFrontCache(o.Queue, s.draws)
	m := s.mux
	// Every route but those that read a JSON body refuses a body larger
	// than maxIgnoredBody (bodiless); enter and the page without JavaScript
	// read theirs, an access code, and the presence beacon its flag, within
	// that bound (smallBody).
	m.HandleFunc("POST /api/v1/queues/{queue}/entries", s.smallBody(s.enter))
	m.HandleFunc("GET /api/v1/queues/{queue}/challenge", s.bodiless(s.challenge))
	m.HandleFunc("GET /api/v1/queues/{queue}/entries/me", s.bodiless(s.status))
	m.HandleFunc("DELETE /api/v1/queues/{queue}/entries/me", s.bodiless(s.leave))
	m.HandleFunc("POST /api/v1/queues/{queue}/entries/me/presence", s.smallBody(s.presence)) // a page's beacon (issue 55)
	m.HandleFunc("POST /api/v1/queues/{queue}/entries/me/handoff", s.bodiless(s.handoff))
	m.HandleFunc("GET /api/v1/queues/{queue}/front", s.bodiless(s.front))
	m.HandleFunc("GET /api/v1/queues/{queue}/draw", s.bodiless(s.draw))
	if o.Orders != nil { // gateway mode has no order API of its own
		m.HandleFunc("POST /api/v1/orders", s.placeOrder)
		m.HandleFunc("GET /api/v1/products/{id}", s.bodiless(s.product))
		m.HandleFunc("GET /admin/v1/products", s.bodiless(s.admin(s.listProducts)))
		m.HandleFunc("PUT /admin/v1/products/{id}", s.admin(s.putProduct))
		m.HandleFunc("POST /admin/v1/products/{id}/restock", s.admin(s.restockProduct))
	}

	m.HandleFunc("GET /admin/v1/queues", s.bodiless(s.admin(s.listQueues)))
	m.HandleFunc("GET /admin/v1/queues/{queue}", s.bodiless(s.admin(s.queueStats)))
	m.HandleFunc("PUT /admin/v1/queues/{queue}", s.admin(s.putQueue))
	m.HandleFunc("PATCH /admin/v1/queues/{queue}", s.admin(s.patchQueue))
	m.HandleFunc("GET /admin/v1/queues/{queue}/history", s.bodiless(s.admin(s.queueHistory)))
	m.HandleFunc("GET /admin/v1/queues/{queue}/rollups", s.bodiless(s.admin(s.queueRollups)))
	m.HandleFunc("GET /admin/v1/queues/{queue}/schedule", s.bodiless(s.admin(s.queueSchedule)))
	m.HandleFunc("GET /admin/v1/queues/{queue}/report", s.bodiless(s.admin(s.queueReport)))
	m.HandleFunc("POST /admin/v1/queues/{queue}/sold-out", s.bodiless(s.admin(s.soldOut)))
	m.HandleFunc("POST /admin/v1/queues/{queue}/restock", s.admin(s.restock))
	m.HandleFunc("POST /admin/v1/queues/{queue}/codes", s.admin(s.addCodes))
	m.HandleFunc("GET /admin/v1/queues/{queue}/suspects", s.bodiless(s.admin(s.listSuspects)))
	m.HandleFunc("POST /admin/v1/queues/{queue}/suspects/{id}/clear", s.bodiless(s.admin(s.clearSuspect)))
	m.HandleFunc("GET /admin/v1/queue-settings", s.bodiless(s.admin(s.queueSettings)))
	m.HandleFunc("GET /admin/sso/login", s.bodiless(s.signInOn(s.signInStart)))
	m.HandleFunc("GET /admin/sso/callback", s.bodiless(s.signInOn(s.signInCallback)))
	m.HandleFunc("GET /admin/sso/session", s.bodiless(s.signInOn(s.adminSession)))
	m.HandleFunc("POST /admin/sso/logout", s.bodiless(s.signInOn(s.adminSignOut)))
	m.HandleFunc("POST /admin/v1/tokens", s.admin(s.createToken))
	m.HandleFunc("GET /admin/v1/tokens", s.bodiless(s.admin(s.listTokens)))
	m.HandleFunc("DELETE /admin/v1/tokens/{name}", s.bodiless(s.admin(s.revokeToken)))
	m.HandleFunc("GET /admin/v1/audit", s.bodiless(s.admin(s.listAudit)))

	if o.MetricsHandler != nil {
		m.HandleFunc("GET /metrics", s.bodiless(o.MetricsHandler.ServeHTTP))
	}
	if o.OpenAPI != nil {
		m.HandleFunc("GET /openapi.yaml", s.bodiless(s.openAPI))
	}
	m.HandleFunc("GET /healthz", s.bodiless(s.healthz))
	m.HandleFunc("GET /readyz", s.bodiless(s.readyz))
	m.HandleFunc("GET /{$}", s.bodiless(s.page))
	m.HandleFunc("GET /q/{queue}", s.bodiless(s.page))
	m.HandleFunc("GET /q/{queue}/noscript", s.bodiless(s.noScript))
	m.HandleFunc("POST /q/{queue}/noscript", s.smallBody(s.noScript))                // its access code form (issue 53)
	m.HandleFunc("POST /q/{queue}/noscript/handoff", s.smallBody(s.noScriptHandoff)) // its handoff button (issue 55)
	m.HandleFunc("GET /q/{queue}/handoff/{code}", s.bodiless(s.handoffPage))
	m.HandleFunc("POST /q/{queue}/handoff/{code}", s.smallBody(s.claimHandoff)) // the "Continue here" button's form
	m.HandleFunc("GET /static/", s.bodiless(s.pageFiles))
	m.HandleFunc("GET /assets/custom/", s.bodiless(s.pageFiles))
	m.HandleFunc("GET /admin", s.bodiless(s.pageFiles))
	return s
}

// Handle adds a route that takes no body, served like the others (request
// id, metrics, JSON errors, bodiless): what gateway mode serves beside the
// API under its prefix.
func (s *Server) Handle(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, s.bodiless(h)) }

// maxIgnoredBody is the most a route that takes no body accepts (and
// ignores): a client that sends more is refused before the route does any
// work, so a request cannot make the server read megabytes it never uses.
const maxIgnoredBody = 1 << 10

// bodiless guards a route that takes no body: a declared length over
// maxIgnoredBody is refused at once; a body of unknown length (chunked) is
// read up to the limit, within the time a request head gets.
func (s *Server) bodiless(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.ContentLength > maxIgnoredBody:
			s.writeError(w, r, errTooLarge)
			return
		case r.ContentLength < 0:
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
			n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, maxIgnoredBody+1))
			http.NewResponseController(w).SetReadDeadline(time.Time{})
			if n > maxIgnoredBody {
				s.writeError(w, r, errTooLarge)
				return
			}
		}
		h(w, r)
	}
}

// bodyReadTimeout bounds the wait for a body of unknown length on a route
// that takes none (gateway mode has no ReadTimeout: uploads pass through).
const bodyReadTimeout = 5 * time.Second

// SetDraining makes /readyz fail so load balancers stop sending traffic
// while in-flight requests finish, and answers held requests at once.
// false undoes it.
func (s *Server) SetDraining(v bool) {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	if v == isClosed(s.drained) {
		return
	}
	if v {
		close(s.drained)
	} else {
		s.drained = make(chan struct{})
	}
}

// draining reports whether SetDraining(true) is in force.
func (s *Server) draining() bool { return isClosed(s.drainSignal()) }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// FlushErrorLog writes the error log lines still held back (errorLog), at
// shutdown.
func (s *Server) FlushErrorLog() { s.errLog.Flush() }

// Held is how many requests are held open for news right now.
func (s *Server) Held() int { return len(s.held) }

// drainSignal is closed when draining starts.
func (s *Server) drainSignal() <-chan struct{} {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	return s.drained
}

// ServeHTTP implements http.Handler: request id, panic guard, JSON 404/405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 {
		// A correlation id, not a secret: math/rand spares a getrandom
		// system call on every request.
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], mrand.Uint64())
		id = hex.EncodeToString(b[:])
	}
	w.Header().Set("X-Request-Id", id)
	r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, req: r}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.writeError(sw, r, errors.New("panic: "+slog.AnyValue(v).String()))
		}
		route := r.Pattern // set by the mux as it routes
		if route == "" {
			route = "unmatched"
		}
		s.finish(sw, r, route, time.Since(start))
	}()
	s.mux.ServeHTTP(sw, r)
	if sw.unrouted {
		s.noRoute(sw, r)
	}
}

// finish records one answered request: its metrics, and at debug level an
// access log line (at info it would cost more than the request on sale night).
func (s *Server) finish(sw *statusWriter, r *http.Request, route string, d time.Duration) {
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	s.Metrics.ObserveHTTP(route, status, d)
	if s.logger.Enabled(r.Context(), slog.LevelDebug) {
		s.logger.DebugContext(r.Context(), "request", "request_id", requestID(r.Context()),
			"method", r.Method, "route", route, "queue", r.PathValue("queue"),
			"status", status, "outcome", sw.outcome(), "duration", d)
	}
}

// statusWriter remembers the status and the error code of an answer, and
// holds back the mux's own plain-text 404/405 (written before any pattern
// matched, so req.Pattern is empty) for noRoute to answer as JSON. The
// request is routed once.
type statusWriter struct {
	http.ResponseWriter
	req      *http.Request
	status   int
	code     string // the error code, when the answer is an error
	unrouted bool   // the mux answered: no route matched
	rerouted bool   // noRoute is answering instead
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && w.req.Pattern == "" && code >= 400 && !w.rerouted {
		w.status, w.unrouted = code, true
		return
	}
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.unrouted {
		return len(b), nil
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) outcome() string {
	if w.code != "" {
		return w.code
	}
	return "ok"
}

// noRoute answers, as JSON, what the mux answered in plain text for a
// request no pattern matched: 405 (its Allow header stays) or 404.
func (s *Server) noRoute(sw *statusWriter, r *http.Request) {
	code := sw.status
	sw.unrouted, sw.rerouted, sw.status = false, true, 0
	if code == http.StatusMethodNotAllowed {
		s.writeError(sw, r, errMethod)
		return
	}
	s.writeError(sw, r, errNotFound)
}

type requestIDKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decodeJSON reads one JSON object of at most maxBody bytes, refusing
// unknown fields so a typo is an error rather than silently ignored.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSONUpTo(w, r, v, maxBody)
}

// decodeJSONUpTo is decodeJSON for a body of at most limit bytes.
func decodeJSONUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	// The whole (bounded) body is read before parsing, so every body over
	// maxBody is 413 whatever it holds. Decoding straight from the stream
	// answered 400 instead when the JSON broke, or only trailing white space
	// followed, before the limit was reached.
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errTooLarge
		}
		return errWith(errBadRequest, "reading the body: "+err.Error())
	}
	// Only an object: `null` would otherwise decode without error into the
	// zero value (a PUT of "null" created a queue with the defaults).
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errWith(errBadRequest, "body must be one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errWith(errBadRequest, "body must be one JSON object: "+err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return errWith(errBadRequest, "body must hold exactly one JSON object")
	}
	return nil
}

// openAPI serves the HTTP contract (openapi.yaml at the repository root).
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(s.OpenAPI)
}

// Service is what GET /healthz names as the program answering. A client
// about to send the admin token (the admin commands of cmd/waitroom) asks
// it first, with no token: at an address that reaches another server (the
// shop's backend at a gateway's root) it finds no "waitroom" and sends
// nothing secret.
const Service = "waitroom"

// healthz answers 200 while the process serves HTTP, naming the service.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "service": Service})
}

// Readiness is the body of a ready /readyz: what the instance knows of the
// parts it depends on, whether or not they keep it from being ready.
type Readiness struct {
	// Store is the line's store: "up", "degraded" (on Redis Cluster, some
	// queues' slots do not answer: those queues answer 503) or "down".
	Store string `json:"store"`
	// DegradedQueues are the queues whose store does not answer.
	DegradedQueues []string `json:"degradedQueues,omitempty"`
	// OnStoreError is --on-store-error: "wait" or "admit".
	OnStoreError string `json:"onStoreError,omitempty"`
	// StoreBreaker is "closed" (the store is asked) or "open" (some
	// queue's store failed: its requests are answered at once without
	// it, until a probe finds it back); BreakerOpenQueues lists them.
	StoreBreaker      string   `json:"storeBreaker,omitempty"`
	BreakerOpenQueues []string `json:"breakerOpenQueues,omitempty"`
	// Upstream, in gateway mode, is "reachable" (the backend's address
	// takes connections) or "unreachable".
	Upstream string `json:"upstream,omitempty"`
	// Warnings are what an operator should fix although the instance
	// serves (a Redis that may evict waitroom's keys).
	Warnings []string `json:"warnings,omitempty"`
}

// readyz is GET /readyz[?strict=1].
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	var strict bool
	switch v := r.URL.Query().Get("strict"); v {
	case "1", "true":
		strict = true
	case "", "0", "false":
	default:
		s.writeError(w, r, errWith(errBadRequest, "strict: want 1, true, 0 or false"))
		return
	}
	if s.draining() {
		s.writeError(w, r, errDraining)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var ready Readiness
	if s.Ready != nil {
		var err error
		if ready, err = s.Ready(ctx, strict); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Readiness
	}{"ready", ready})
}
