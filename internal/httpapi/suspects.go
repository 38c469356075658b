package httpapi

import (
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/operate"
	"github.com/waitroom/waitroom/internal/suspect"
)

// suspectsPage is the default number of places GET …/suspects lists.
const suspectsPage = 100

// suspectJSON is one place of the shadow line as the operator sees it: the
// address only as the keyed hash the place keeps, never in clear.
type suspectJSON struct {
	// ID is the place's shadow ticket, as a string: an opaque name to clear
	// it by, not a number to count with.
	ID       string    `json:"id"`
	JoinedAt time.Time `json:"joinedAt"`
	Signals  []string  `json:"signals"`
	Address  string    `json:"address"`
	Behind   int64     `json:"behind"`
}

type suspectListJSON struct {
	Queue        string        `json:"queue"`
	ShadowLength int64         `json:"shadowLength"`
	Suspects     []suspectJSON `json:"suspects"`
}

// suspectID is a shadow ticket as a path names it: a positive decimal
// integer of at most 19 digits, written one way only.
var suspectID = regexp.MustCompile(`^[1-9][0-9]{0,18}$`)

// listSuspects answers the queue's shadow line, oldest first: ?limit=
// (1..operate.MaxSuspects, suspectsPage) places, and how many it holds.
func (s *Server) listSuspects(w http.ResponseWriter, r *http.Request) {
	limit := suspectsPage
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > operate.MaxSuspects {
			s.writeError(w, r, errWith(errBadRequest, "limit must be an integer from 1 to "+strconv.Itoa(operate.MaxSuspects)))
			return
		}
		limit = n
	}
	q := r.PathValue("queue")
	list, st, err := s.Operate.Suspects(r.Context(), q, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := suspectListJSON{Queue: q, ShadowLength: st.ShadowLength, Suspects: make([]suspectJSON, 0, len(list))}
	for _, p := range list {
		out.Suspects = append(out.Suspects, toSuspectJSON(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func toSuspectJSON(p suspect.Place) suspectJSON {
	signals := p.Signals
	if signals == nil {
		signals = []string{} // an array on the wire, never null
	}
	return suspectJSON{ID: strconv.FormatInt(p.Ticket, 10), JoinedAt: p.Joined.UTC(), Signals: signals,
		Address: p.Address, Behind: p.Behind}
}

// clearedJSON says what clearing a suspect did: the place joined the real
// line, and the queue's lines are now this long.
type clearedJSON struct {
	Queue        string `json:"queue"`
	ID           string `json:"id"`
	Cleared      bool   `json:"cleared"`
	Length       int64  `json:"length"`
	ShadowLength int64  `json:"shadowLength"`
	ClearedTotal int64  `json:"clearedTotal"`
}

// clearSuspect moves one place of the shadow line into the real line
// (operate.Operator.ClearSuspect), logs the operator's action, and answers
// the queue's lines after it.
func (s *Server) clearSuspect(w http.ResponseWriter, r *http.Request) {
	q, id := r.PathValue("queue"), r.PathValue("id")
	if err := queue.ValidateQueueName(q); err != nil {
		s.writeError(w, r, err)
		return
	}
	ticket, err := strconv.ParseInt(id, 10, 64)
	if !suspectID.MatchString(id) || err != nil {
		s.writeError(w, r, errWith(errBadRequest, "id must be a suspect's id: a positive integer, as the list gives it"))
		return
	}
	if err := s.Operate.ClearSuspect(r.Context(), q, ticket); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.logger.InfoContext(r.Context(), "suspect cleared", "queue", q, "request_id", requestID(r.Context()), "suspect", id)
	st, err := s.Operate.Stats(r.Context(), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, clearedJSON{Queue: q, ID: id, Cleared: true, Length: st.Length,
		ShadowLength: st.ShadowLength, ClearedTotal: st.ClearedTotal})
}
