package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
	"github.com/waitroom/waitroom/internal/queue/front"
)

// frontJSON is the front document as the page reads it (openapi.yaml's
// Front): the same bytes for every caller, naming no one.
type frontJSON struct {
	Queue              string         `json:"queue"`
	Epoch              int64          `json:"epoch"`
	Head               int64          `json:"head"`
	Last               int64          `json:"last"`
	QueueLength        int64          `json:"queueLength"`
	Left               frontLeftJSON  `json:"left"`
	Cleared            []int64        `json:"cleared"`
	Pace               frontPaceJSON  `json:"pace"`
	Drawn              bool           `json:"drawn"`
	OpensAt            *time.Time     `json:"opensAt"`
	Placing            bool           `json:"placing"`
	SoldOut            bool           `json:"soldOut"`
	UnitsLeft          *int64         `json:"unitsLeft"`
	SoldOutPollSeconds int64          `json:"soldOutPollSeconds"`
	Message            any            `json:"message"`
	AskWithin          int64          `json:"askWithin"`
	Presence           *presenceJSON  `json:"presence"`
	NotifyLeadSeconds  int64          `json:"notifyLeadSeconds"`
	MaxAgeSeconds      int64          `json:"maxAgeSeconds"`
	Draw               *frontDrawJSON `json:"draw,omitempty"`
}

// frontDrawJSON is the pending commitment of the queue's draw and where
// its record will be published (relative to the API's base).
type frontDrawJSON struct {
	Commitment string `json:"commitment"`
	URL        string `json:"url"`
}

// frontLeftJSON lists the leavers above the head as the gaps between them,
// the first from the head: the tickets of thousands who left, in a few
// bytes each.
type frontLeftJSON struct {
	Deltas   []int64 `json:"deltas"`
	Complete bool    `json:"complete"`
	Unlisted int64   `json:"unlisted"`
}

type frontPaceJSON struct {
	RatePerSecond         float64 `json:"ratePerSecond"`
	EstimateRatePerSecond float64 `json:"estimateRatePerSecond"`
	BatchSize             int     `json:"batchSize"`
	NextTickAdmits        int64   `json:"nextTickAdmits"`
	Paused                bool    `json:"paused"`
	Stalled               bool    `json:"stalled"`
	// Estimate is the estimate's model (front.Document.Model), which with
	// nextTickAdmits is the page's estimate.Params.
	Estimate frontEstimateJSON `json:"estimate"`
}

// frontEstimateJSON is the public lane's model of the wait (issue 54):
// the page works out the range from it as estimate.Of does.
type frontEstimateJSON struct {
	AdmitRatePerSecond float64         `json:"admitRatePerSecond"`
	Claim              float64         `json:"claim"`
	Spread             float64         `json:"spread"`
	IntervalSeconds    float64         `json:"intervalSeconds"`
	Steps              []frontStepJSON `json:"steps"`
}

// frontStepJSON is a rate change ahead, afterSeconds from the document's
// instant.
type frontStepJSON struct {
	AfterSeconds  float64 `json:"afterSeconds"`
	RatePerSecond float64 `json:"ratePerSecond"`
}

func toFrontEstimateJSON(m estimate.Params) frontEstimateJSON {
	out := frontEstimateJSON{AdmitRatePerSecond: m.Rate, Claim: m.Claim, Spread: m.Spread, IntervalSeconds: m.Interval,
		Steps: make([]frontStepJSON, len(m.Steps))}
	for i, s := range m.Steps {
		out.Steps[i] = frontStepJSON{AfterSeconds: s.After, RatePerSecond: s.Rate}
	}
	return out
}

type presenceJSON struct {
	Within       int64 `json:"within"`
	EverySeconds int64 `json:"everySeconds"`
}

func toFrontJSON(q string, d front.Document) frontJSON {
	out := frontJSON{Queue: q, Epoch: d.Epoch, Head: d.Head, Last: d.Last, QueueLength: d.Length,
		Left: frontLeftJSON{Deltas: make([]int64, len(d.Left)), Complete: d.Unlisted == 0, Unlisted: d.Unlisted}, Cleared: d.Cleared,
		Pace: frontPaceJSON{RatePerSecond: d.Rate, EstimateRatePerSecond: d.EstimateRate, BatchSize: d.Batch,
			NextTickAdmits: d.NextTickAdmits, Paused: d.Paused, Stalled: d.Stalled, Estimate: toFrontEstimateJSON(d.Model)},
		Drawn: d.Drawn, Placing: d.Placing, SoldOut: d.Stock.SoldOut(), SoldOutPollSeconds: int64(d.SoldOutPoll / time.Second),
		Message: d.Message, AskWithin: d.AskWithin, NotifyLeadSeconds: int64(d.NotifyLead / time.Second),
		MaxAgeSeconds: int64(front.MaxAge / time.Second)}
	prev := d.Head
	for i, t := range d.Left {
		out.Left.Deltas[i], prev = t-prev, t
	}
	if !d.OpensAt.IsZero() {
		at := d.OpensAt.UTC()
		out.OpensAt = &at
	}
	if d.Stock.Known {
		out.UnitsLeft = &d.Stock.Units
	}
	if d.Draw != "" {
		out.Draw = &frontDrawJSON{Commitment: d.Draw, URL: "/api/v1/queues/" + url.PathEscape(q) + "/draw"}
	}
	if d.PresenceWithin > 0 {
		out.Presence = &presenceJSON{Within: d.PresenceWithin, EverySeconds: int64(d.PresenceEvery / time.Second)}
	}
	return out
}

// frontCacheControl lets any cache (a CDN, nginx, the browser) answer for
// front.MaxAge and a little longer while it fetches the next, whoever asks:
// the document is the same for everyone.
var frontCacheControl = []string{"public, max-age=" + strconv.Itoa(int(front.MaxAge/time.Second)) +
	", stale-while-revalidate=" + strconv.Itoa(int(front.StaleFor/time.Second))}

// front serves the queue's front document, with a strong ETag (a hash of
// its bytes) and 304 to a client that holds it already. It reads no
// identity and sets no cookie.
func (s *Server) front(w http.ResponseWriter, r *http.Request) {
	doc, err := s.fronts.get(r.Context(), r.PathValue("queue"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h["Cache-Control"], h["Etag"] = frontCacheControl, []string{doc.etag}
	if etagMatches(r.Header.Get("If-None-Match"), doc.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = jsonContentType
	w.Write(doc.body)
}

// etagMatches reads If-None-Match as RFC 9110 §13.1.2 says: a list of tags
// (a weak one compares by its opaque part) or *.
func etagMatches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == etag || tag == "*" {
			return true
		}
	}
	return false
}

// frontRebuild is how old a queue's document may be before a request
// builds it again: the default admission tick, and the default age of the
// snapshot it is built from, so the document changes at most as often as
// the line can.
const frontRebuild = 100 * time.Millisecond

// frontCache holds each existing queue's document, built by one request
// at most once per frontRebuild while the others wait for it.
type frontCache struct {
	queue *queue.Service
	draws *drawCache

	mu     sync.Mutex
	queues map[string]*frontEntry
}

type frontEntry struct {
	mu      sync.Mutex // held while building: the others wait for it
	builtAt time.Time
	doc     frontDoc
}

// frontDoc is one build of a document: its bytes (never changed once
// built) and their ETag.
type frontDoc struct {
	body []byte
	etag string
}

func newFrontCache(q *queue.Service, draws *drawCache) *frontCache {
	return &frontCache{queue: q, draws: draws, queues: map[string]*frontEntry{}}
}

// get is the queue's document as bytes and their ETag, built afresh when
// older than frontRebuild. Only a queue that exists keeps an entry.
func (c *frontCache) get(ctx context.Context, q string) (frontDoc, error) {
	c.mu.Lock()
	e, ok := c.queues[q]
	if !ok {
		e = &frontEntry{}
		c.queues[q] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.doc.body != nil && time.Since(e.builtAt) < frontRebuild {
		return e.doc, nil
	}
	body, err := c.build(ctx, q)
	if err != nil {
		if e.doc.body == nil { // never built: the queue may not exist
			c.mu.Lock()
			delete(c.queues, q)
			c.mu.Unlock()
		}
		return frontDoc{}, err
	}
	sum := sha256.Sum256(body)
	e.builtAt, e.doc = time.Now(), frontDoc{body: body, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
	return e.doc, nil
}

func (c *frontCache) build(ctx context.Context, q string) ([]byte, error) {
	sn, err := c.queue.Snapshot(ctx, q)
	if err != nil {
		return nil, err
	}
	cfg, err := c.queue.ConfigInForce(ctx, q)
	if err != nil {
		return nil, err
	}
	doc := front.New(sn, cfg)
	doc.Draw = c.draws.pending(ctx, q, doc.OpensAt) // the ledger as read at most a second ago
	body, err := json.Marshal(toFrontJSON(q, doc))
	return append(body, '\n'), err
}
