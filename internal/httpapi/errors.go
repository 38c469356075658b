package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/adminsso"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/handoff"
	"github.com/waitroom/waitroom/internal/humancheck"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/order"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/front"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/staff"
)

// Detailed is an error that adds fields to its error object, such as the
// URL where the missing thing can be had.
type Detailed interface {
	error
	Details() map[string]string
}

var (
	errBadRequest = errors.New("invalid request")
	errNotFound   = errors.New("not found")
	errAdminAuth  = errors.New("admin token missing or wrong")
	errAdminOff   = errors.New("admin API disabled: no admin token configured")
	errTooLarge   = errors.New("request body too large")
	errMethod     = errors.New("method not allowed")
	errDraining   = errors.New("server is shutting down")
	// ErrNotReady: the dependencies answer, but the instance should get no
	// traffic yet (/readyz says why).
	ErrNotReady = errors.New("not ready")
	// errBadBody: a body that is not exactly what the route takes (the
	// presence beacon's {"hidden": true|false}).
	errBadBody = errors.New("invalid body")
)

// errorRow is how one kind of error is answered.
type errorRow struct {
	status     int
	code       string
	retryAfter int // seconds; 0 = no header
}

// errorTable maps every error the API knows to its answer. Anything not in
// it is unexpected: 500, and logged once, here at the edge.
var errorTable = []struct {
	err error
	row errorRow
}{
	{queue.ErrQueueNotFound, errorRow{http.StatusNotFound, "queue_not_found", 0}},
	{queue.ErrQueueFull, errorRow{http.StatusTooManyRequests, "queue_full", 30}},
	{queue.ErrQueueClosed, errorRow{http.StatusForbidden, "queue_closed", 0}},
	{queue.ErrSoldOut, errorRow{http.StatusGone, "sold_out", 0}},
	{operate.ErrSuspectNotFound, errorRow{http.StatusNotFound, "suspect_not_found", 0}},
	{errDrawNotFound, errorRow{http.StatusNotFound, "draw_not_found", 0}},
	{errBadCommitment, errorRow{http.StatusBadRequest, "invalid_commitment", 0}},
	{errBadParticipant, errorRow{http.StatusBadRequest, "invalid_participant", 0}},
	{queue.ErrInvalidUser, errorRow{http.StatusBadRequest, "invalid_user_id", 0}},
	{queue.ErrInvalidQueue, errorRow{http.StatusBadRequest, "invalid_queue_name", 0}},
	{queue.ErrInvalidConfig, errorRow{http.StatusBadRequest, "invalid_config", 0}},
	{queue.ErrTokenInvalid, errorRow{http.StatusForbidden, "entry_token_invalid", 0}},
	{queue.ErrTokenInUse, errorRow{http.StatusConflict, "order_in_progress", 0}},
	{front.ErrTicketInvalid, errorRow{http.StatusForbidden, "ticket_invalid", 0}},
	// A malformed code is answered as a wrong one: the answer tells a
	// guesser nothing about what the queue holds.
	{accesscode.ErrInvalid, errorRow{http.StatusForbidden, "invalid_code", 0}},
	{accesscode.ErrMalformed, errorRow{http.StatusForbidden, "invalid_code", 0}},
	{accesscode.ErrUsed, errorRow{http.StatusConflict, "code_used", 0}},
	{errCodeInURL, errorRow{http.StatusBadRequest, "code_in_url", 0}},
	// Handoffs (issue 55): a session with no place to hand off is
	// answered as one not in line; a claim's refusals are pages
	// (claimHandoff) but counted under these codes.
	{handoff.ErrNoPlace, errorRow{http.StatusNotFound, "not_in_queue", 0}},
	{handoff.ErrNotNeeded, errorRow{http.StatusConflict, "handoff_not_needed", 0}},
	{handoff.ErrAlreadyInLine, errorRow{http.StatusConflict, "already_in_line", 0}},
	{handoff.ErrGone, errorRow{http.StatusGone, "handoff_gone", 0}},
	{errCrossSite, errorRow{http.StatusForbidden, "cross_site_request", 0}},
	{errCodeUnreadable, errorRow{http.StatusUnsupportedMediaType, "unsupported_media_type", 0}},
	{queue.ErrUnavailable, errorRow{http.StatusServiceUnavailable, "unavailable", 5}},
	{order.ErrProductNotFound, errorRow{http.StatusNotFound, "product_not_found", 0}},
	{order.ErrOutOfStock, errorRow{http.StatusConflict, "out_of_stock", 0}},
	{order.ErrTokenUsed, errorRow{http.StatusForbidden, "entry_token_invalid", 0}},
	{order.ErrInvalidOrder, errorRow{http.StatusBadRequest, "invalid_request", 0}},
	{order.ErrIdempotencyKeyReused, errorRow{http.StatusUnprocessableEntity, "idempotency_key_reused", 0}},
	{order.ErrPayment, errorRow{http.StatusPaymentRequired, "payment_failed", 0}},
	{order.ErrUnavailable, errorRow{http.StatusServiceUnavailable, "unavailable", 5}},
	{context.DeadlineExceeded, errorRow{http.StatusServiceUnavailable, "timeout", 5}},
	// The client went away mid-request: nobody reads this answer, and it is
	// no fault of ours, so no 5xx and no error log (499 as nginx counts it).
	{context.Canceled, errorRow{499, "client_closed", 0}},
	{identity.ErrUnauthenticated, errorRow{http.StatusUnauthorized, "unauthenticated", 0}},
	{gatekeeper.ErrChallengeRequired, errorRow{http.StatusForbidden, "challenge_required", 0}},
	{gatekeeper.ErrSignInRequired, errorRow{http.StatusForbidden, "signin_required", 0}},
	{gatekeeper.ErrHumanCheckRequired, errorRow{http.StatusForbidden, "human_check_required", 0}},
	{gatekeeper.ErrSuspectedBot, errorRow{http.StatusForbidden, "suspected_bot", 0}},
	// A likely bot in an outage under --on-store-error admit is told what
	// everyone is told under wait: nothing that says it was judged.
	{gatekeeper.ErrSuspectDegraded, errorRow{http.StatusServiceUnavailable, "unavailable", 5}},
	// The provider cannot be asked (or this instance has no keys for it):
	// nobody is let on nor marked for it, and the page asks again.
	{humancheck.ErrUnavailable, errorRow{http.StatusServiceUnavailable, "human_check_unavailable", 5}},
	// Retry-After is the address's own wait (RetryAfter) when the error
	// knows it; 1 s otherwise.
	{gatekeeper.ErrTooManyEntries, errorRow{http.StatusTooManyRequests, "too_many_entries", 1}},
	{errBadRequest, errorRow{http.StatusBadRequest, "invalid_request", 0}},
	{errBadBody, errorRow{http.StatusBadRequest, "invalid_body", 0}},
	{errTooLarge, errorRow{http.StatusRequestEntityTooLarge, "body_too_large", 0}},
	{errNotFound, errorRow{http.StatusNotFound, "not_found", 0}},
	{errMethod, errorRow{http.StatusMethodNotAllowed, "method_not_allowed", 0}},
	{errAdminAuth, errorRow{http.StatusUnauthorized, "admin_unauthorized", 0}},
	{errAdminOff, errorRow{http.StatusForbidden, "admin_disabled", 0}},
	// The admin page's sign-in (issue 56): not configured; no live
	// session; a change in a session without its CSRF value.
	{errSignInOff, errorRow{http.StatusNotFound, "sign_in_off", 0}},
	{adminsso.ErrNoSession, errorRow{http.StatusUnauthorized, "signed_out", 0}},
	{adminsso.ErrCSRF, errorRow{http.StatusForbidden, "csrf_required", 0}},
	// Roles and named tokens (issue 56).
	{errForbiddenRole, errorRow{http.StatusForbidden, "forbidden_role", 0}},
	{staff.ErrTokenExists, errorRow{http.StatusConflict, "token_exists", 0}},
	{errTokenNotFound, errorRow{http.StatusNotFound, "token_not_found", 0}},
	{errDraining, errorRow{http.StatusServiceUnavailable, "draining", 2}},
	{ErrNotReady, errorRow{http.StatusServiceUnavailable, "not_ready", 5}},
	{gateway.ErrUpstreamUnavailable, errorRow{http.StatusBadGateway, "upstream_unavailable", 5}},
	{gateway.ErrUpstreamTimeout, errorRow{http.StatusGatewayTimeout, "upstream_timeout", 5}},
	{gateway.ErrUnsafeReturn, errorRow{http.StatusBadRequest, "invalid_return", 0}},
	{gateway.ErrAmbiguousRoute, errorRow{http.StatusBadRequest, "ambiguous_route", 0}},
	{gateway.ErrRequestTarget, errorRow{http.StatusBadRequest, "invalid_request_target", 0}},
	{gateway.ErrUnreadablePath, errorRow{http.StatusBadRequest, "invalid_path", 0}},
	{gateway.ErrUnreadableHeader, errorRow{http.StatusBadRequest, "invalid_header", 0}},
	{gateway.ErrMethodOverride, errorRow{http.StatusBadRequest, "invalid_method_override", 0}},
	{gateway.ErrUntrustedAsker, errorRow{http.StatusForbidden, "untrusted_proxy", 0}},
	{gateway.ErrNotAsJudged, errorRow{http.StatusBadRequest, "not_as_judged", 0}},
	{gateway.ErrDecisionRequest, errorRow{http.StatusBadRequest, "invalid_decision_request", 0}},
	// Not 421 Misdirected Request, apt as it reads: RFC 9110 lets a client
	// send a 421's request again on another connection, the admin token
	// with it.
	{gateway.ErrAdminTokenOutsidePrefix, errorRow{http.StatusBadRequest, "admin_token_outside_prefix", 0}},
}

// noteError looks err up in the table, logs it when it is unexpected or a
// dependency's failure, counts it, and says what the client may be told:
// the row (with the error's own Retry-After when it knows one) and the
// message.
func (s *Server) noteError(w http.ResponseWriter, r *http.Request, err error) (errorRow, string) {
	row, known := lookupError(err)
	msg := err.Error()
	// Logged once per code per second, with a count (errorLog): during an
	// outage every request fails the same way.
	if !known {
		s.errLog.log(r.Context(), slog.LevelError, row.code, "unexpected error", "method", r.Method, "path", r.URL.Path,
			"request_id", requestID(r.Context()), "err", err)
		msg = "internal error"
	} else if row.status >= 500 && !errors.Is(err, errDraining) && !errors.Is(err, ErrNotReady) {
		// (Draining and not-ready are this instance's own news, said in full.)
		s.errLog.log(r.Context(), slog.LevelWarn, row.code, "dependency unavailable", "path", r.URL.Path,
			"request_id", requestID(r.Context()), "err", err)
		msg = "temporarily unavailable; retry after " + strconv.Itoa(row.retryAfter) + " s"
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.code = row.code
	}
	s.Metrics.Rejected(row.code)
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		row.retryAfter = max(int((ra.RetryAfter()+time.Second-1)/time.Second), 1)
	}
	return row, msg
}

// errWith adds detail to a sentinel, keeping errors.Is working.
func errWith(sentinel error, detail string) error {
	return fmt.Errorf("%w: %s", sentinel, detail)
}

func lookupError(err error) (errorRow, bool) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.row, true
		}
	}
	return errorRow{http.StatusInternalServerError, "internal", 0}, false
}

// WriteError answers err from the one table, as every route does: for
// what gateway mode answers itself.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeError(w, r, err)
}

// writeError answers err from the table. Unexpected errors are logged here,
// once; their text never reaches the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	row, msg := s.noteError(w, r, err)
	if row.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(row.retryAfter))
	}
	body := map[string]any{"code": row.code, "message": msg}
	var d Detailed
	if errors.As(err, &d) {
		for k, v := range d.Details() {
			if k != "code" && k != "message" {
				body[k] = v
			}
		}
	}
	writeJSON(w, row.status, map[string]any{"error": body})
}
