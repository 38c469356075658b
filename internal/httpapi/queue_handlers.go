package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/gatekeeper"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/report"
	"github.com/waitroom/waitroom/internal/web"
)

// The WAITING / READY / NOT_IN_QUEUE answers (DESIGN.md §3) are the answer
// to every poll, so they are written by hand into a pooled buffer rather
// than through encoding/json, whose reflection and allocations were a
// measurable share of a poll's CPU (BenchmarkAnswerJSON: before and after in
// one run). queue_handlers_test.go keeps the struct encoding/json wrote
// them from and checks the bytes are the same.

// appendAnswerJSON appends the answer for v, with the queue's message for
// the reader ("": none), newline-terminated as json.Encoder ends it,
// without allocating.
func appendAnswerJSON(b []byte, v queue.View, message string) []byte {
	b = append(b, `{"status":`...)
	b = appendJSONString(b, string(v.State))
	opening := v.State == queue.Waiting && !v.OpensAt.IsZero()
	switch {
	case opening: // no place yet: opensAt instead, below
		b = appendWaitKnown(b, v)
	case v.State == queue.SoldOut:
		b = appendWaitKnown(b, v)
	case v.State == queue.Waiting:
		b = appendLane(b, v)
		b = append(b, `,"position":`...)
		if v.Drawn { // a draw (queueingMethod random): no place to tell
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, v.Position, 10)
		}
		b = append(b, `,"queueLength":`...)
		b = strconv.AppendInt(b, v.Length, 10)
		b = append(b, `,"estimatedWaitSeconds":`...)
		b = strconv.AppendInt(b, v.EstimatedWaitSeconds, 10)
		b = appendWaitKnown(b, v)
	case v.State == queue.Ready:
		if v.Token != "" {
			b = append(b, `,"token":`...)
			b = appendJSONString(b, v.Token)
		}
		b = append(b, `,"expiresAt":"`...)
		b = v.ExpiresAt.AppendFormat(b, time.RFC3339Nano) // as time.Time's MarshalJSON
		b = append(b, '"')
	}
	// pollAfterSeconds is always present: null when there is nothing to wait for.
	b = append(b, `,"pollAfterSeconds":`...)
	if v.PollAfterSeconds == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *v.PollAfterSeconds, 10)
	}
	// paused and stalled qualify the estimate, so only WAITING carries
	// them: READY and NOT_IN_QUEUE keep their documented shapes (DESIGN.md
	// §3) whatever the queue's state. Before the opening, opensAt stands
	// for the position.
	if v.State == queue.Waiting && v.Paused {
		b = append(b, `,"paused":true`...)
	}
	if v.State == queue.Waiting && !opening && v.Stalled && !v.Paused {
		b = append(b, `,"stalled":true`...)
	}
	if v.State == queue.Waiting && v.BeyondStock {
		b = append(b, `,"beyondStock":true`...)
	}
	if opening {
		b = append(b, `,"opensAt":"`...)
		b = v.OpensAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	// The operator's message, in every state: the reader sees it whatever
	// the line tells them.
	if message != "" {
		b = append(b, `,"message":`...)
		b = appendJSONString(b, message)
	}
	return append(b, "}\n"...)
}

// appendWaitKnown appends whether the wait is known (issue 54;
// queue.View.Estimate): with its range when it is, with why not when it
// is not. Every answer that may carry an estimate says it (WAITING, before
// the opening too, and SOLD_OUT), so a client tells "not known" from "not
// sent". A reason needs no escaping (the estimate.Unknown… constants).
func appendWaitKnown(b []byte, v queue.View) []byte {
	e := v.Estimate
	if e.Known {
		b = append(b, `,"waitTimeKnown":true,"estimatedWaitRange":{"low":`...)
		b = strconv.AppendInt(b, e.Low, 10)
		b = append(b, `,"high":`...)
		b = strconv.AppendInt(b, e.High, 10)
		return append(b, '}')
	}
	b = append(b, `,"waitTimeKnown":false`...)
	if e.Reason != "" {
		b = append(b, `,"waitTimeUnknownReason":"`...)
		b = append(b, e.Reason...)
		b = append(b, '"')
	}
	return b
}

// appendLane appends the answer's lane, in a queue with lanes (issue 53;
// queue.View.Lane): a lane's name needs no escaping (lane.Lane.Name).
func appendLane(b []byte, v queue.View) []byte {
	if v.Lane == "" {
		return b
	}
	b = append(b, `,"lane":"`...)
	b = append(b, v.Lane...)
	return append(b, '"')
}

// appendJSONString appends s as a JSON string. States and tokens (base64url)
// need no escaping; anything else is left to encoding/json, escaped as it
// escapes (HTML characters too).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// The enter and status answers' header values, shared: net/http only reads them, and a
// fresh []string per answer is an allocation per poll.
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// writeAnswer answers 200 with v and the message, as writeJSON would.
func writeAnswer(w http.ResponseWriter, v queue.View, message string) {
	writeAnswerMarked(w, v, message, "", draw.Participant{}, false)
}

// writeAnswerMarked is writeAnswer, with the user's signed ticket ("":
// none), their participant id and salt in the opening's draw (in the
// pre-queue; zero: none) and "degraded": true (a READY given without the
// store, answerDegraded) last.
func writeAnswerMarked(w http.ResponseWriter, v queue.View, message, ticket string, part draw.Participant, degraded bool) {
	bp := answerBufs.Get().(*[]byte)
	b := appendAnswerJSON((*bp)[:0], v, message)
	if ticket != "" { // "t1.", digits, dots and base64url: nothing to escape
		b = append(b[:len(b)-len("}\n")], `,"ticket":"`...)
		b = append(append(b, ticket...), "\"}\n"...)
	}
	if part.ID != "" { // hex both: nothing to escape
		b = append(b[:len(b)-len("}\n")], `,"draw":{"participant":"`...)
		b = append(append(b, part.ID...), `","salt":"`...)
		b = append(append(b, part.Salt...), "\"}}\n"...)
	}
	if degraded {
		b = append(b[:len(b)-len("}\n")], `,"degraded":true}`+"\n"...)
	}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonContentType, noStore
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	*bp = b
	answerBufs.Put(bp)
}

// user resolves the request's identity or answers the error itself.
func (s *Server) user(w http.ResponseWriter, r *http.Request) (string, bool) {
	u, err := s.Identity.User(r)
	if err != nil {
		s.writeError(w, r, err)
		return "", false
	}
	return u, true
}

func (s *Server) enter(w http.ResponseWriter, r *http.Request)  { s.line(w, r, true) }
func (s *Server) status(w http.ResponseWriter, r *http.Request) { s.line(w, r, false) }

// maxWaitSeconds bounds ?waitSeconds= on enter and status, below the
// server's write timeout (30 s) with room to spare.
const maxWaitSeconds = 25

// line answers enter and status: the user's standing, held for news when
// the client sent ?waitSeconds= and admission is near (queue.HoldFrom).
// An enter that lands near the front waits as a status poll would, rather
// than have the client sleep pollAfterSeconds while being let in.
func (s *Server) line(w http.ResponseWriter, r *http.Request, enter bool) {
	if codeInURL(r) { // refused before anything reads, logs or counts the request's URL
		s.writeError(w, r, errCodeInURL)
		return
	}
	caller, err := s.Identity.Caller(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	user := caller.User
	hold, err := waitSeconds(r)
	hidden := false
	if err == nil && !enter {
		hidden, err = hiddenQuery(r)
	}
	if err == nil {
		err = s.takeTicket(r, user)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rule, ok := s.Bypass.Match(r, r.PathValue("queue")); ok {
		s.answerBypassed(w, r, rule)
		return
	}
	entrant, ok := s.entrant(w, r, caller, enter)
	if !ok {
		return
	}
	var v queue.View
	if enter {
		v, err = s.Gate.Enter(r.Context(), r.PathValue("queue"), entrant)
	} else {
		v, err = s.Queue.Status(r.Context(), r.PathValue("queue"), user, hidden)
	}
	// Held only once the answer says admission is near: a request far back
	// is answered at once and never takes one of the hold slots, which are
	// for those about to be let in (nor counts in waitroom_status_held).
	if err == nil && hold > 0 && v.AdmissionNear && s.tryHold() {
		defer s.releaseHold()
		v, err = s.holdStatus(r, user, hold, v)
	}
	if err != nil && s.Degraded.Admits() && errors.Is(err, queue.ErrUnavailable) {
		s.answerDegraded(w, r, entrant, enter)
		return
	}
	if err != nil {
		s.writeError(w, r, s.refusalInOperatorsWords(r, err))
		return
	}
	s.Gate.Answered(r.PathValue("queue"), user, v)
	if !enter {
		s.Gate.Polled(r.PathValue("queue"), user, v)
	}
	q := r.PathValue("queue")
	message, lanes := s.answerConfig(r, q)
	v.Lane = laneShown(v, lanes)
	writeAnswerMarked(w, v, message, s.signedTicket(q, user, v), s.participant(q, user, v), false)
}

// entrant is the caller as the gate sees them, with the lane an enter asks
// for (joinOf); false once it answered the request itself. Under
// --on-store-error admit a queue whose store is away is answered degraded
// before the lane is sought, as before lanes: finding it may read the
// queue's config from the store, and a lane matters to no degraded READY.
// When the store turns out away while the lane is sought, the same holds;
// under wait a member whose lane cannot be known is refused (503), never
// placed as the public.
func (s *Server) entrant(w http.ResponseWriter, r *http.Request, caller identity.Caller, enter bool) (gatekeeper.Entrant, bool) {
	e := s.Gate.Entrant(r, caller)
	if s.Degraded.AdmitNow(r.PathValue("queue")) {
		s.answerDegraded(w, r, e, enter)
		return e, false
	}
	if !enter {
		return e, true
	}
	join, err := s.joinOf(r, caller)
	switch {
	case err == nil:
		e.Join = join
		return e, true
	case s.Degraded.Admits() && errors.Is(err, queue.ErrUnavailable):
		s.answerDegraded(w, r, e, enter)
	default:
		s.writeError(w, r, err)
	}
	return e, false
}

// TicketHeader carries the signed ticket a page was given back to its
// instance (entries and entries/me): one this server did not sign for
// this user and queue is refused (403 ticket_invalid), so a forged or
// altered ticket gets no answer at all, never a place or an entry. The
// answer itself is the line's own: a ticket never stands in for it. It
// only tells the instance which place to look up in its snapshot of the
// line (queue.Service.TicketShown), as the store's last answer would have.
const TicketHeader = "X-Waitroom-Ticket"

// takeTicket refuses a request carrying a ticket not signed here for the
// user in the request's queue (a request without one is not asked for it),
// and tells the line the ticket a request shows signed
// (queue.Service.TicketShown).
func (s *Server) takeTicket(r *http.Request, user string) error {
	signed := r.Header.Get(TicketHeader)
	if signed == "" || s.Tickets == nil {
		return nil
	}
	epoch, ticket, shadow, err := s.Tickets.Verify(r.PathValue("queue"), user, signed)
	// A shadow place's ticket names the place a person arriving with it
	// would hold: it places no one in the real line, and its user is
	// answered from the shadow standing (the instance's or the store's).
	if err == nil && !shadow {
		s.Queue.TicketShown(r.PathValue("queue"), user, epoch, ticket)
	}
	return err
}

// signedTicket is the user's ticket in answer v, signed; "" when they hold
// none (not waiting, before an opening) or no signer is configured.
//
// A shadow place's ticket (a suspect's) is the real line's epoch and the
// ticket a person arriving with it would hold (queue.View.Shadow): the
// front document places it as that person, and only its MAC says it is a
// shadow place's (front.Tickets.SignShadow), so shown back it is never
// taken for a place in the real line (takeTicket).
func (s *Server) signedTicket(q, user string, v queue.View) string {
	if s.Tickets == nil || v.Ticket == 0 || (v.State != queue.Waiting && v.State != queue.SoldOut) {
		return ""
	}
	if v.Shadow {
		return s.Tickets.SignShadow(q, user, v.Epoch, v.Ticket)
	}
	return s.Tickets.Sign(q, user, v.Epoch, v.Ticket)
}

// operatorsWords is an error whose message is the queue's own, for the
// reader (a closed sale's "Sold out: thank you"), in place of ours.
type operatorsWords struct {
	err  error
	text string
}

func (e operatorsWords) Error() string { return e.text }
func (e operatorsWords) Unwrap() error { return e.err }

// refusalInOperatorsWords is err, and when it refuses a newcomer a place
// (closed, full, sold out) said with the queue's message for the request's
// reader: a closed sale's "Sold out: thank you" reaches whoever is turned
// away, by whichever route.
func (s *Server) refusalInOperatorsWords(r *http.Request, err error) error {
	if errors.Is(err, queue.ErrQueueClosed) || errors.Is(err, queue.ErrSoldOut) {
		return inOperatorsWords(err, s.entryMessage(r, r.PathValue("queue")))
	}
	return err
}

// inOperatorsWords is err said with the queue's message, when it has one.
func inOperatorsWords(err error, message string) error {
	if message == "" {
		return err
	}
	return operatorsWords{err, message}
}

// answerDegraded answers enter or status while the queue's store is away,
// under --on-store-error admit: READY with "degraded": true and the user's
// degraded token for the queue, which the order API takes only while it
// finds the store away too (degraded.Policy.Accept). Nothing is written:
// the user keeps whatever place they had. A likely bot (a shadow place
// this instance answered, or the signals judged without the store) gets no
// degraded entry: 503 + Retry-After, as under wait; counted as refused on
// enter only, not at each status poll.
func (s *Server) answerDegraded(w http.ResponseWriter, r *http.Request, e gatekeeper.Entrant, enter bool) {
	q, user := r.PathValue("queue"), e.Caller.User
	if err := s.Gate.DegradedRefusal(r.Context(), q, e, enter); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.Metrics.Degraded("entry")
	token, expires := s.Degraded.Issue(q, user)
	writeAnswerMarked(w, queue.View{State: queue.Ready, Token: token, ExpiresAt: expires}, "", "", draw.Participant{}, true)
}

// answerBypassed answers enter or status for staff or a monitor a --bypass
// rule lets past the line of an existing queue: READY at once, with a fresh
// one-time token written nowhere, so it takes no place, no share of the
// admission rate and no live-token slot (maxActiveTokens). The order API
// accepts it because the order request is let past by the same rules
// (placeOrder), not because the line knows it: without the rule the token
// is worth nothing.
func (s *Server) answerBypassed(w http.ResponseWriter, r *http.Request, rule string) {
	q := r.PathValue("queue")
	c, err := s.Queue.ConfigInForce(r.Context(), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.Metrics.Bypassed(rule)
	v := queue.View{State: queue.Ready, Token: queue.NewTokens(1)[0], ExpiresAt: time.Now().Add(c.TokenTTL).UTC()}
	writeAnswer(w, v, s.entryMessage(r, q))
}

// entryMessage is the queue's message for the request's reader, by ?lang=
// (the page's language) then Accept-Language; "" when there is none, or
// when the config cannot be read just now (the next poll brings it). The
// config is read at most once a second per queue (ConfigInForce), and a
// change made through this instance shows at once, so a new message
// reaches everyone within one poll.
func (s *Server) entryMessage(r *http.Request, q string) string {
	message, _ := s.answerConfig(r, q)
	return message
}

// answerConfig is what an answer takes from the queue's config in force,
// read once (each read takes the service's lock of its configs, on every
// poll): the operator's message in the caller's language ("" when the
// config cannot be read: no message) and whether the queue has lanes.
func (s *Server) answerConfig(r *http.Request, q string) (message string, lanes bool) {
	c, err := s.Queue.ConfigInForce(r.Context(), q)
	if err != nil {
		return "", false
	}
	asked := web.RequestLanguages(r)
	return c.Message.For(append(asked[0], asked[1]...)...), len(c.Lanes) > 0
}

// ChallengeSolutionHeader carries a solved challenge on enter: the ALTCHA
// payload, base64 JSON.
const ChallengeSolutionHeader = gatekeeper.ChallengeSolutionHeader

// HumanCheckTokenHeader carries the human-check provider's token on enter
// under entry policy turnstile: the one its widget handed the page.
const HumanCheckTokenHeader = "X-Human-Check-Token"

// challenge issues a proof-of-work challenge for the queue (ALTCHA v2
// parameters and signature); its solution, sent with enter, takes one
// place. A queue that takes no newcomers now (closed, full, sold out) hands out
// none: its refusal instead, as entering would answer it. A likely bot, where
// the queue challenges suspects, is handed the dearer challenge its place
// asks (queue.Config.SuspectCost).
func (s *Server) challenge(w http.ResponseWriter, r *http.Request) {
	caller, err := s.Identity.Caller(r)
	if err != nil { // a challenge asks for no identity: judged by address and score
		caller = identity.Caller{}
	}
	c, err := s.Gate.Challenge(r.Context(), r.PathValue("queue"), s.Gate.Entrant(r, caller))
	if err != nil {
		s.writeError(w, r, s.refusalInOperatorsWords(r, err))
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// holdStatus holds from v (the standing just read: queue.HoldFrom), ended
// early when the client leaves or the server starts draining.
func (s *Server) holdStatus(r *http.Request, user string, hold time.Duration, v queue.View) (queue.View, error) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.drainSignal():
			cancel()
		case <-ctx.Done():
		}
	}()
	return s.Queue.HoldFrom(ctx, r.PathValue("queue"), user, hold, v)
}

func (s *Server) tryHold() bool {
	select {
	case s.held <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Server) releaseHold() { <-s.held }

// waitSeconds reads ?waitSeconds= (absent: 0): how long the client is
// willing to have its request held for news.
func waitSeconds(r *http.Request) (time.Duration, error) {
	if r.URL.RawQuery == "" { // the common poll: no query to parse
		return 0, nil
	}
	raw := r.URL.Query().Get("waitSeconds")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || n > maxWaitSeconds {
		return 0, errWith(errBadRequest, fmt.Sprintf("waitSeconds must be a whole number of seconds from 0 to %d", maxWaitSeconds))
	}
	return time.Duration(n) * time.Second, nil
}

func (s *Server) leave(w http.ResponseWriter, r *http.Request) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	if err := s.Queue.Leave(r.Context(), r.PathValue("queue"), user); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decodeSettings reads a PUT or PATCH body: one JSON object whose keys are
// settings the admin may change (queue.Settings), each value of its kind;
// null is the same as leaving it out. An unknown or read-only key, or a
// value of the wrong type, is 400 invalid_request naming it; a value out of
// range is refused later, by queue.Apply and Config.Validate, as
// invalid_config.
func decodeSettings(w http.ResponseWriter, r *http.Request) (map[string]any, error) {
	var raw map[string]json.RawMessage
	if err := decodeJSONUpTo(w, r, &raw, maxSettingsBody); err != nil {
		return nil, err
	}
	changes := make(map[string]any, len(raw))
	for name, v := range raw {
		s, ok := queue.SettingNamed(name)
		if !ok || s.ReadOnly {
			return nil, errWith(errBadRequest, fmt.Sprintf("unknown field %q", name))
		}
		if bytes.Equal(v, []byte("null")) {
			continue
		}
		val, err := settingValue(s.Kind, v)
		if err != nil {
			return nil, errWith(errBadRequest, fmt.Sprintf("%s must be a JSON %s: %v", name, jsonKind(s.Kind), err))
		}
		changes[name] = val
	}
	return changes, nil
}

// settingValue decodes one JSON value as queue.Setting.Set takes it.
func settingValue(k queue.Kind, raw json.RawMessage) (any, error) {
	switch k {
	case queue.Number:
		var f float64
		err := json.Unmarshal(raw, &f)
		return f, err
	case queue.Integer, queue.Duration:
		var n int64 // refuses fractions and numbers beyond int64
		err := json.Unmarshal(raw, &n)
		return n, err
	case queue.Bool:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case queue.PhaseList, queue.LaneList: // read, each phase or lane, by queue's own rules
		return raw, nil
	case queue.TextByLanguage: // a string, or an object of strings
		if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '{' {
			var m map[string]string
			err := json.Unmarshal(raw, &m)
			return m, err
		}
		var str string
		err := json.Unmarshal(raw, &str)
		return str, err
	default:
		var str string
		err := json.Unmarshal(raw, &str)
		return str, err
	}
}

// jsonKind is the JSON type a setting's kind is written as.
func jsonKind(k queue.Kind) string {
	switch k {
	case queue.Duration:
		return "integer"
	case queue.Instant, queue.Choice:
		return "string"
	case queue.TextByLanguage:
		return "string or an object of strings by language"
	case queue.PhaseList:
		return "array of phases"
	case queue.LaneList:
		return "array of lanes"
	}
	return string(k)
}

// stockRequestJSON is a restock's optional body: the units left, when the
// operator knows them.
type stockRequestJSON struct {
	UnitsLeft *int64 `json:"unitsLeft"`
}

// soldOut marks a queue sold out by hand (Queue.SetStock 0): what the
// order API does itself when it sells the last unit, for a shop whose
// stock waitroom does not see.
func (s *Server) soldOut(w http.ResponseWriter, r *http.Request) {
	s.setStock(w, r, "sold-out", queue.Stock{Known: true}, false)
}

// restock reopens a sold-out queue, everyone's place kept: with the units
// left the body gives; else, with the order API, as its database has them
// (a queue no product names: not known); else not known.
func (s *Server) restock(w http.ResponseWriter, r *http.Request) {
	var body stockRequestJSON
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &body); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	st := queue.Stock{}
	if body.UnitsLeft != nil {
		st = queue.Stock{Known: true, Units: *body.UnitsLeft}
	}
	s.setStock(w, r, "restock", st, body.UnitsLeft == nil && s.Orders != nil)
}

// setStock carries out an operator's stock command: it sets a queue's
// stock, then with recount as the order API's database has it (if any
// product names the queue), logs the change as a settings change is
// logged (saveQueue), and answers with the queue's stats (as queueStats).
func (s *Server) setStock(w http.ResponseWriter, r *http.Request, command string, st queue.Stock, recount bool) {
	q := r.PathValue("queue")
	now, err := s.Operate.SetStock(r.Context(), q, st, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if recount {
		s.Orders.TellStock(r.Context(), q, false)
	}
	stats, err := s.Operate.Stats(r.Context(), q)
	if err == nil {
		now = stats.Stock // a recount's, when there was one
	}
	s.logStockChanged(r, q, command, now, recount)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toStatsJSON(stats, s.Queue.Clock()))
}

// logStockChanged writes the info line of an operator's stock command: the
// queue, the request, the command, units left (nil: not known), whether it
// is sold out, and whether the units were recounted from the products.
// The gateway writes the same line for the backend's X-Waitroom-Command.
func (s *Server) logStockChanged(r *http.Request, q, command string, st queue.Stock, recounted bool) {
	var units any
	if st.Known {
		units = st.Units
	}
	attrs := []any{"queue", q, "request_id", requestID(r.Context()), "command", command, "unitsLeft", units, "soldOut", st.SoldOut()}
	if recounted {
		attrs = append(attrs, "recounted", true) // from the order API's products
	}
	s.logger.InfoContext(r.Context(), "queue stock changed", attrs...)
}

// statsJSON is a queue as the admin sees it at now: every setting
// (queue.Settings), the phase in force, and the numbers of the line.
func toStatsJSON(st queue.Stats, now time.Time) map[string]any {
	out := map[string]any{
		"queue":                  st.Queue,
		"length":                 st.Length,
		"admittedTotal":          st.AdmittedTotal,
		"activeTokens":           st.ActiveTokens,
		"consumedTotal":          st.ConsumedTotal,
		"measuredRatePerSecond":  math.Round(st.MeasuredRate*10) / 10,
		"effectiveRatePerSecond": st.EffectiveRate,
		"effectiveRateReason":    st.EffectiveWhy,
		"abandonedTotal":         st.AbandonedTotal,
		"preQueueLength":         st.PreQueued,
		"shadowLength":           st.ShadowLength,
		"shadowEnteredTotal":     st.ShadowEnteredTotal,
		"shadowAdmittedTotal":    st.ShadowAdmittedTotal,
		"shadowLeftTotal":        st.ShadowLeftTotal,
		"clearedTotal":           st.ClearedTotal,
		"unitsLeft":              nil,
		"soldOut":                st.Stock.SoldOut(),
	}
	if st.Stock.Known {
		out["unitsLeft"] = st.Stock.Units
	}
	for _, set := range queue.Settings {
		out[set.Name] = set.Value(st.Config)
	}
	out["laneStats"] = toLaneStats(st)
	out["phaseInForce"] = nil
	if in := st.Config.InForce(now); in.PhaseInForce != "" {
		out["phaseInForce"] = in.PhaseInForce // its own rate is already the effective one (operate.Operator.Stats)
	}
	return out
}

// settingJSON describes one setting to the admin page, which builds its
// queue form from them.
type settingJSON struct {
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	Unit         string   `json:"unit,omitempty"`
	Minimum      *float64 `json:"minimum,omitempty"`
	Maximum      *float64 `json:"maximum,omitempty"`
	MinExclusive bool     `json:"exclusiveMinimum,omitempty"`
	ZeroMeansOff bool     `json:"zeroIsOff,omitempty"`
	Choices      []string `json:"choices,omitempty"`
	ChoiceLabels []string `json:"choiceLabels,omitempty"`
	ReadOnly     bool     `json:"readOnly,omitempty"`
	Role         string   `json:"role,omitempty"` // who may change it (none: read-only)
	Default      any      `json:"default"`
	Label        string   `json:"label"`
	Help         string   `json:"help"`
}

// queueSettings serves the settings table: names, kinds, ranges, the
// defaults new queues start from here, and, in English, what each is
// called and does (the admin page shows these, translated).
func (s *Server) queueSettings(w http.ResponseWriter, r *http.Request) {
	out := make([]settingJSON, 0, len(queue.Settings))
	for _, set := range queue.Settings {
		j := settingJSON{Name: set.Name, Kind: string(set.Kind), ReadOnly: set.ReadOnly, Role: string(set.Role),
			Default: set.Value(s.NewQueueConfig), Label: set.Label, Help: web.SettingHelp(set.Name)}
		switch set.Kind {
		case queue.Number, queue.Integer, queue.Duration:
			j.Minimum, j.Maximum, j.MinExclusive, j.ZeroMeansOff = &set.Min, &set.Max, set.MinExclusive, set.ZeroMeansOff
		case queue.Choice:
			j.Choices, j.ChoiceLabels = set.Choices, set.ChoiceLabels
		}
		if set.Kind == queue.Duration { // a whole number of its unit
			j.Kind = "integer"
			j.Unit = map[time.Duration]string{time.Millisecond: "ms", time.Second: "s"}[set.Unit]
		}
		out = append(out, j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"settings": out})
}

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) {
	names, err := s.Operate.Queues(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		st, err := s.Operate.Stats(r.Context(), n)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out = append(out, toStatsJSON(st, s.Queue.Clock()))
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": out})
}

func (s *Server) queueStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.Operate.Stats(r.Context(), r.PathValue("queue"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toStatsJSON(st, s.Queue.Clock()))
}

// historyJSON is a queue's recent samples, oldest first.
type historyJSON struct {
	Queue        string             `json:"queue"`
	EverySeconds float64            `json:"everySeconds"`
	Points       []historyPointJSON `json:"points"`
	RateChanges  []rateChangeJSON   `json:"rateChanges"`
}

type historyPointJSON struct {
	At                     time.Time `json:"at"`
	Length                 int64     `json:"length"`
	AdmittedTotal          int64     `json:"admittedTotal"`
	EffectiveRatePerSecond float64   `json:"effectiveRatePerSecond"`
}

// rateChangeJSON is one change of the rate admission uses.
type rateChangeJSON struct {
	At            time.Time `json:"at"`
	RatePerSecond float64   `json:"ratePerSecond"`
	Reason        string    `json:"reason"`
}

func (s *Server) queueHistory(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if _, err := s.Operate.Config(r.Context(), q); err != nil { // 400 bad name, 404 no such queue
		s.writeError(w, r, err)
		return
	}
	out := historyJSON{Queue: q, Points: []historyPointJSON{}, RateChanges: []rateChangeJSON{}}
	if s.History != nil {
		out.EverySeconds = s.History.Every().Seconds()
		for _, p := range s.History.Points(q) {
			out.Points = append(out.Points, historyPointJSON{At: p.At.UTC(), Length: p.Length, AdmittedTotal: p.AdmittedTotal,
				EffectiveRatePerSecond: p.EffectiveRate})
		}
	}
	changes, err := s.Operate.RateChanges(r.Context(), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, c := range changes {
		out.RateChanges = append(out.RateChanges, rateChangeJSON{At: c.At, RatePerSecond: c.Rate, Reason: c.Why})
	}
	writeJSON(w, http.StatusOK, out)
}

// defaultRollupSpan is how far back a rollups request without since reads.
const defaultRollupSpan = 24 * time.Hour

// queueRollups answers a queue's per-minute rows and the sale's moments
// (operate.Operator.Rollups, rollup.Rollup's JSON) from since to until (RFC
// 3339; until defaults to now, since to a day before until). Rows outlive
// their queue until their retention (--rollup-retention), so a queue that
// does not exist (any more) answers its rows kept, or none.
func (s *Server) queueRollups(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if err := queue.ValidateQueueName(q); err != nil {
		s.writeError(w, r, err)
		return
	}
	until, since := s.Queue.Clock(), time.Time{}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"until", &until}, {"since", &since}} {
		if v := r.URL.Query().Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				s.writeError(w, r, fmt.Errorf("%w: %s must be an RFC 3339 time: %v", errBadRequest, p.name, err))
				return
			}
			*p.to = t
		}
	}
	if since.IsZero() {
		since = until.Add(-defaultRollupSpan)
	}
	if until.Before(since) || until.Sub(since) > rollup.MaxRange {
		s.writeError(w, r, fmt.Errorf("%w: since must come before until, at most %v before it", errBadRequest, rollup.MaxRange))
		return
	}
	out, err := s.Operate.Rollups(r.Context(), q, since, until)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, saleOf(out))
}

// saleOf is a queue's rows as `waitroom report` reads them (report.Sale,
// the shape its TestSaleJSON pins): histograms as buckets with their
// bounds, time in line in seconds; moments with a detail in words.
func saleOf(r rollup.Rollup) report.Sale {
	sale := report.Sale{Queue: r.Queue, From: r.Since, Until: r.Until, Minutes: []report.Minute{}, Moments: []report.Moment{}}
	for _, m := range r.Minutes {
		sale.Minutes = append(sale.Minutes, rollup.WithHistograms(m, bucketsOf))
	}
	for _, m := range r.Moments {
		sale.Moments = append(sale.Moments, report.Moment{At: m.At, Kind: m.Type, Detail: momentDetail(m)})
	}
	return sale
}

// bucketsOf is a row's histogram (rollup.Bucket's, in milli-units: bucket
// 0 up to 1, about nothing) with its bounds in units: seconds, or a ratio.
func bucketsOf(h rollup.Histogram) report.Histogram {
	counts := make(map[int]int64, len(h))
	for b, n := range h {
		if b > 0 {
			counts[b] = n
		}
	}
	out := report.Exponential(1.05, h[0], counts)
	for i := range out {
		out[i].Lo, out[i].Hi = out[i].Lo/1000, out[i].Hi/1000
	}
	return out
}

// momentDetail says in words what a moment's data holds.
func momentDetail(m rollup.Moment) string {
	num := func(k string) string { return strconv.FormatFloat(toFloat(m.Data[k]), 'g', -1, 64) }
	switch m.Type {
	case "phase.started":
		return fmt.Sprint(m.Data["phase"])
	case "rate.changed":
		return fmt.Sprintf("%s/s → %s/s: %v", num("previousRate"), num("rate"), m.Data["reason"])
	case "queue.closed":
		return fmt.Sprint(m.Data["reason"])
	case "stock.restocked":
		if m.Data["unitsLeft"] != nil {
			return num("unitsLeft") + " units left"
		}
	}
	return ""
}

func toFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

// scheduleJSON is which settings are in force when (queue.Config.Schedule).
type scheduleJSON struct {
	Queue string           `json:"queue"`
	Now   time.Time        `json:"now"`
	Steps []map[string]any `json:"steps"`
	// Commitments is the queue's draw ledger as the public sees it
	// (GET /api/v1/queues/{queue}/draw): never a seed, here either.
	Commitments []commitmentJSON `json:"commitments"`
}

// scheduleStep is one stretch of the schedule: its phase (nil for the
// queue's own settings), from, until (nil: for good), the page template,
// and every setting a phase may change (queue.Setting.Phased) as it is in
// force then, with whether the rate is adaptive (a phase's rate is not).
func scheduleStep(c queue.Config, step queue.Phase) map[string]any {
	in := c.InForce(step.StartsAt)
	js := map[string]any{"phase": nil, "from": step.StartsAt.UTC(), "until": nil, "adaptive": in.Adaptive}
	for _, s := range queue.Settings {
		if s.Phased {
			js[s.Name] = s.Value(in.Config)
		}
	}
	if step.Name != "" {
		js["phase"] = step.Name
	}
	if !step.EndsAt.IsZero() {
		js["until"] = step.EndsAt.UTC()
	}
	if in.PageTemplate != "" {
		js["template"] = in.PageTemplate
	}
	return js
}

func (s *Server) queueSchedule(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	c, err := s.Operate.Config(r.Context(), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.Queue.Clock().UTC().Truncate(time.Millisecond)
	out := scheduleJSON{Queue: q, Now: now, Commitments: []commitmentJSON{}}
	for _, step := range c.Schedule(now) {
		out.Steps = append(out.Steps, scheduleStep(c, step))
	}
	if s.Draws != nil { // read afresh: an operator checks what was just committed
		all, err := s.Draws.Draws(r.Context(), q)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out.Commitments = toCommitmentsJSON(all)
	}
	writeJSON(w, http.StatusOK, out)
}

// putQueue creates a queue or replaces its config; fields left out take
// the defaults, so PUT means "exactly this".
func (s *Server) putQueue(w http.ResponseWriter, r *http.Request) {
	changes, err := decodeSettings(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.saveQueue(w, r, s.NewQueueConfig, changes)
}

func (s *Server) patchQueue(w http.ResponseWriter, r *http.Request) {
	changes, err := decodeSettings(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.Operate.Config(r.Context(), r.PathValue("queue"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.mayPatch(w, r, c, changes) {
		return
	}
	s.saveQueue(w, r, c, changes)
}

// saveQueue applies the changes to c and stores the result; a change
// refused for any reason changes nothing.
func (s *Server) saveQueue(w http.ResponseWriter, r *http.Request, c queue.Config, changes map[string]any) {
	name := r.PathValue("queue")
	c, err := queue.Apply(c, changes)
	if err == nil {
		err = s.Operate.PutConfig(r.Context(), name, c)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	attrs := []any{"queue", name, "request_id", requestID(r.Context())}
	for _, set := range queue.Settings {
		if _, ok := changes[set.Name]; ok {
			attrs = append(attrs, set.Name, set.Value(c))
		}
	}
	s.logger.InfoContext(r.Context(), "queue config changed", attrs...)
	if s.QueueConfigChanged != nil {
		s.QueueConfigChanged(r.Context(), name, c)
	}
	s.queueStats(w, r)
}
