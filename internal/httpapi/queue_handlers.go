package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// The WAITING / READY / NOT_IN_QUEUE answers (DESIGN.md §3) are the answer
// to every poll, so they are written by hand into a pooled buffer rather
// than through encoding/json, whose reflection and allocations were a
// measurable share of a poll's CPU (BenchmarkEntryJSON: before and after in
// one run). queue_handlers_test.go keeps the struct encoding/json wrote
// them from and checks the bytes are the same.

// appendEntryJSON appends the answer for v, newline-terminated as
// json.Encoder ends it, without allocating.
func appendEntryJSON(b []byte, v queue.View) []byte {
	b = append(b, `{"status":`...)
	b = appendJSONString(b, string(v.State))
	switch v.State {
	case queue.Waiting:
		b = append(b, `,"position":`...)
		b = strconv.AppendInt(b, v.Position, 10)
		b = append(b, `,"queueLength":`...)
		b = strconv.AppendInt(b, v.Length, 10)
		b = append(b, `,"estimatedWaitSeconds":`...)
		b = strconv.AppendInt(b, v.EstimatedWaitSeconds, 10)
	case queue.Ready:
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
	// paused qualifies the estimate, so only WAITING carries it: READY and
	// NOT_IN_QUEUE keep their documented shapes whatever the queue's pause
	// switch says.
	if v.State == queue.Waiting && v.Paused {
		b = append(b, `,"paused":true`...)
	}
	return append(b, "}\n"...)
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

var entryBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// The entry answers' header values, shared: net/http only reads them, and a
// fresh []string per answer is an allocation per poll.
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// writeEntry answers 200 with v, as writeJSON would.
func writeEntry(w http.ResponseWriter, v queue.View) {
	bp := entryBufs.Get().(*[]byte)
	b := appendEntryJSON((*bp)[:0], v)
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonContentType, noStore
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	*bp = b
	entryBufs.Put(bp)
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
// the client sent ?waitSeconds= and admission is near (queue.WaitStatus).
// An enter that lands near the front waits as a status poll would, rather
// than have the client sleep pollAfterSeconds while being let in.
func (s *Server) line(w http.ResponseWriter, r *http.Request, enter bool) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	hold, err := waitSeconds(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var v queue.View
	if enter {
		v, err = s.Queue.Enter(r.Context(), r.PathValue("queue"), user)
	}
	switch {
	case err != nil:
	case (!enter || v.AdmissionNear()) && hold > 0 && s.tryHold():
		defer s.releaseHold()
		v, err = s.holdStatus(r, user, hold)
	case !enter: // no wait asked, or too many held already: answer now
		v, err = s.Queue.Status(r.Context(), r.PathValue("queue"), user)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeEntry(w, v)
}

// holdStatus is WaitStatus, ended early when the client leaves or the
// server starts draining.
func (s *Server) holdStatus(r *http.Request, user string, hold time.Duration) (queue.View, error) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.drainSignal():
			cancel()
		case <-ctx.Done():
		}
	}()
	return s.Queue.WaitStatus(ctx, r.PathValue("queue"), user, hold)
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

// queueConfigJSON is the admin's view of a queue's config; PATCH takes any
// subset, so every field is a pointer.
type queueConfigJSON struct {
	RatePerSecond   *float64 `json:"ratePerSecond"`
	BatchSize       *int     `json:"batchSize"`
	IntervalMs      *int64   `json:"intervalMs"`
	Capacity        *int64   `json:"capacity"`
	TokenTTLSeconds *int64   `json:"tokenTtlSeconds"`
	MaxActiveTokens *int64   `json:"maxActiveTokens"`
	Paused          *bool    `json:"paused"`
}

// apply overlays the fields present onto c.
func (j queueConfigJSON) apply(c queue.Config) queue.Config {
	if j.RatePerSecond != nil && *j.RatePerSecond != c.RatePerSecond {
		c.RatePerSecond = *j.RatePerSecond
		c.RateDerivation = "set by admin"
	}
	if j.BatchSize != nil {
		c.BatchSize = *j.BatchSize
	}
	if j.IntervalMs != nil {
		c.Interval = clampDuration(*j.IntervalMs, time.Millisecond)
	}
	if j.Capacity != nil {
		c.Capacity = *j.Capacity
	}
	if j.TokenTTLSeconds != nil {
		c.TokenTTL = clampDuration(*j.TokenTTLSeconds, time.Second)
	}
	if j.MaxActiveTokens != nil {
		c.MaxActiveTokens = *j.MaxActiveTokens
	}
	if j.Paused != nil {
		c.Paused = *j.Paused
	}
	return c
}

// clampDuration converts n units without overflowing; an absurd n becomes
// an absurd (and so refused) duration rather than a wrapped-around one.
func clampDuration(n int64, unit time.Duration) time.Duration {
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		return -1
	}
	return time.Duration(n) * unit
}

type queueStatsJSON struct {
	Queue                 string  `json:"queue"`
	RatePerSecond         float64 `json:"ratePerSecond"`
	BatchSize             int     `json:"batchSize"`
	IntervalMs            int64   `json:"intervalMs"`
	Capacity              int64   `json:"capacity"`
	TokenTTLSeconds       int64   `json:"tokenTtlSeconds"`
	MaxActiveTokens       int64   `json:"maxActiveTokens"`
	Paused                bool    `json:"paused"`
	Length                int64   `json:"length"`
	AdmittedTotal         int64   `json:"admittedTotal"`
	ActiveTokens          int64   `json:"activeTokens"`
	ConsumedTotal         int64   `json:"consumedTotal"`
	MeasuredRatePerSecond float64 `json:"measuredRatePerSecond"`
	RateDerivation        string  `json:"rateDerivation"`
}

func toStatsJSON(st queue.Stats) queueStatsJSON {
	c := st.Config
	return queueStatsJSON{
		Queue: st.Queue, RatePerSecond: c.RatePerSecond, BatchSize: c.BatchSize,
		IntervalMs: c.Interval.Milliseconds(), Capacity: c.Capacity,
		TokenTTLSeconds: int64(c.TokenTTL / time.Second), MaxActiveTokens: c.MaxActiveTokens, Paused: c.Paused,
		Length: st.Length, AdmittedTotal: st.AdmittedTotal, ActiveTokens: st.ActiveTokens,
		ConsumedTotal: st.ConsumedTotal, MeasuredRatePerSecond: math.Round(st.MeasuredRate*10) / 10,
		RateDerivation: c.RateDerivation,
	}
}

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) {
	names, err := s.Queue.Queues(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]queueStatsJSON, 0, len(names))
	for _, n := range names {
		st, err := s.Queue.Stats(r.Context(), n)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out = append(out, toStatsJSON(st))
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": out})
}

func (s *Server) queueStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.Queue.Stats(r.Context(), r.PathValue("queue"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toStatsJSON(st))
}

// historyJSON is a queue's recent samples, oldest first.
type historyJSON struct {
	Queue        string             `json:"queue"`
	EverySeconds float64            `json:"everySeconds"`
	Points       []historyPointJSON `json:"points"`
}

type historyPointJSON struct {
	At            time.Time `json:"at"`
	Length        int64     `json:"length"`
	AdmittedTotal int64     `json:"admittedTotal"`
}

func (s *Server) queueHistory(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	if _, err := s.Queue.Config(r.Context(), q); err != nil { // 400 bad name, 404 no such queue
		s.writeError(w, r, err)
		return
	}
	out := historyJSON{Queue: q, Points: []historyPointJSON{}}
	if s.History != nil {
		out.EverySeconds = s.History.Every().Seconds()
		for _, p := range s.History.Points(q) {
			out.Points = append(out.Points, historyPointJSON{At: p.At.UTC(), Length: p.Length, AdmittedTotal: p.AdmittedTotal})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// putQueue creates a queue or replaces its config; fields left out take
// the defaults, so PUT means "exactly this".
func (s *Server) putQueue(w http.ResponseWriter, r *http.Request) {
	var body queueConfigJSON
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.saveQueue(w, r, body.apply(s.NewQueueConfig))
}

func (s *Server) patchQueue(w http.ResponseWriter, r *http.Request) {
	var body queueConfigJSON
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.Queue.Config(r.Context(), r.PathValue("queue"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.saveQueue(w, r, body.apply(c))
}

func (s *Server) saveQueue(w http.ResponseWriter, r *http.Request, c queue.Config) {
	name := r.PathValue("queue")
	if err := s.Queue.PutConfig(r.Context(), name, c); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.logger.InfoContext(r.Context(), "queue config changed", "queue", name, "rate", c.RatePerSecond,
		"batch", c.BatchSize, "interval", c.Interval, "capacity", c.Capacity, "token_ttl", c.TokenTTL,
		"paused", c.Paused, "request_id", requestID(r.Context()))
	s.queueStats(w, r)
}
