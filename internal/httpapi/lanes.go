package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
)

// Issue 53: lanes and access codes at the edge. A code travels only in a
// POST body (the enter request's accessCode, the page's form): a URL ends
// up in access logs, browser history and Referer headers, so a code in a
// query string is refused (code_in_url) before anything reads it. What
// leaves this file is the code's hash (accesscode.Hash), never the code:
// no log line, metric, error message or store ever holds it.

// errCodeInURL: an access code was sent in the query string (400).
var errCodeInURL = errors.New("an access code travels only in the request's body (accessCode), never in the URL")

// codeInURL says whether the request's query string names an access code
// (accessCode, or code, in any case): the request is refused unread.
func codeInURL(r *http.Request) bool {
	if r.URL.RawQuery == "" { // the common poll: nothing to parse
		return false
	}
	for k := range r.URL.Query() {
		if strings.EqualFold(k, "accessCode") || strings.EqualFold(k, "access_code") || strings.EqualFold(k, "code") {
			return true
		}
	}
	return false
}

// smallBody serves a route whose body is small and optional (enter: the
// access code), as bodiless does but keeping what it read: a body over
// maxIgnoredBody is refused (413) before the route does any work.
func (s *Server) smallBody(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			h(w, r)
			return
		}
		if r.ContentLength > maxIgnoredBody {
			s.writeError(w, r, errTooLarge)
			return
		}
		if r.ContentLength < 0 {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
		}
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxIgnoredBody+1))
		if r.ContentLength < 0 { // lifted at once: a held request must outlive it
			http.NewResponseController(w).SetReadDeadline(time.Time{})
		}
		if err != nil || len(raw) > maxIgnoredBody {
			s.writeError(w, r, errTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		h(w, r)
	}
}

// errCodeUnreadable: a body that may hold an access code, in a form the
// server does not read (415): refused rather than ignored, so that nobody
// believes a code applied that was never read.
var errCodeUnreadable = errors.New("an access code is read from a JSON object's accessCode or the form field accessCode only")

// accessCodeOf reads the access code of an enter request's body: the JSON
// object's accessCode, or the form field accessCode (the page's form);
// "" when the body holds none (most requests have no body at all). A body
// of any other type (or none) that is a JSON object, once trimmed, is read
// as JSON. Any other body is ignored, as before codes were read, unless it
// may hold a code (mayHoldCode): then errCodeUnreadable.
func accessCodeOf(r *http.Request) (string, error) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return "", nil
	}
	raw, err := io.ReadAll(r.Body) // bounded by smallBody
	if raw = bytes.TrimSpace(raw); err != nil || len(raw) == 0 {
		return "", nil
	}
	media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case media == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return "", errWith(errBadRequest, "the form body cannot be read")
		}
		for k, v := range form { // any case, as encoding/json matches accessCode
			if strings.EqualFold(k, "accessCode") && len(v) > 0 {
				return v[0], nil
			}
		}
		return "", nil
	case media == "application/json" || media == "" && raw[0] == '{':
		return jsonAccessCode(raw)
	case raw[0] == '{' && json.Valid(raw):
		return jsonAccessCode(raw)
	case mayHoldCode(raw):
		return "", errCodeUnreadable
	}
	return "", nil
}

// jsonAccessCode is the accessCode of a JSON object. A body that is not
// UTF-8 is refused: encoding/json would read its stray bytes as U+FFFD,
// a code other than the one sent (FuzzAccessCodeBody found it).
func jsonAccessCode(raw []byte) (string, error) {
	if !utf8.Valid(raw) {
		return "", errWith(errBadRequest, "the body must be UTF-8")
	}
	var body struct {
		AccessCode string `json:"accessCode"`
	}
	// The decoder's own message is left out: it never quotes a string
	// value, but nothing of a body that may hold a code is echoed.
	if err := json.Unmarshal(raw, &body); err != nil {
		return "", errWith(errBadRequest, "the body must be a JSON object, with accessCode a string")
	}
	return body.AccessCode, nil
}

// mayHoldCode says whether a body the server does not read may hold an
// access code: it names one (accessCode, access_code, access-code, in any
// case), or is one (accesscode.Canonical reads it whole). A client that
// sends an unrelated body (a JSON array, text, an empty form) is answered
// as before.
func mayHoldCode(raw []byte) bool {
	squeezed := strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(string(raw)))
	if strings.Contains(squeezed, "accesscode") {
		return true
	}
	_, err := accesscode.Canonical(string(raw))
	return err == nil
}

// joinOf is the lane an enter request asks for: by the access code in its
// body (its hash; a malformed code is accesscode.ErrMalformed, answered as
// a wrong one), else by a signed-in caller's claims in a queue whose lanes
// in force go by claims (lane.List.ByClaims); none otherwise.
func (s *Server) joinOf(r *http.Request, caller identity.Caller) (lane.Join, error) {
	code, err := accessCodeOf(r)
	if err != nil {
		return lane.Join{}, err
	}
	if strings.TrimSpace(code) != "" {
		h, err := accesscode.Hash(code)
		return lane.Join{Code: h}, err
	}
	if !caller.Signed {
		return lane.Join{}, nil
	}
	c, err := s.Queue.ConfigInForce(r.Context(), r.PathValue("queue"))
	switch {
	case errors.Is(err, queue.ErrQueueNotFound):
		return lane.Join{}, nil // told by entering
	case err != nil:
		// Not the public lane in its stead: entering may succeed a moment
		// later (the store back), and a member would wait as the public
		// (the fairness check's redis-kill histories found it).
		return lane.Join{}, err
	case !byClaims(c.Lanes):
		return lane.Join{}, nil
	}
	claims := s.Identity.Claims(r)
	return lane.Join{Lane: c.Lanes.ByClaims(func(name string) any { return claims[name] })}, nil
}

// byClaims says whether any of the lanes takes people by a claim.
func byClaims(l lane.List) bool {
	for _, ln := range l {
		if ln.Claim != "" {
			return true
		}
	}
	return false
}

// laneStatsJSON is one lane's figures in a queue's stats (laneStats).
type laneStatsJSON struct {
	Name      string  `json:"name"`
	Share     float64 `json:"share"`
	Length    int64   `json:"length"`
	Admitted  int64   `json:"admitted"`
	Redeemed  int64   `json:"redeemed"`
	CodesLeft int64   `json:"codesLeft"`
}

// toLaneStats is a queue's lanes' figures ([] without lanes).
func toLaneStats(st queue.Stats) []laneStatsJSON {
	out := make([]laneStatsJSON, 0, len(st.Lanes))
	for _, l := range st.Lanes {
		out = append(out, laneStatsJSON{Name: l.Name, Share: l.Share, Length: l.Length, Admitted: l.Admitted, Redeemed: l.Redeemed, CodesLeft: l.CodesLeft})
	}
	return out
}

// laneShown is the lane answer v names (queue.View.Lane): while WAITING its
// own lane, or lane.Public in a queue with lanes in force (lanes, as
// answerConfig read them); "" (no lane field) in a queue without lanes.
// READY names none (queue.Service.view sets none): a token does not keep
// the lane it was let in from.
func laneShown(v queue.View, lanes bool) string {
	if v.State != queue.Waiting || v.Lane != "" {
		return v.Lane
	}
	if lanes {
		return lane.Public
	}
	return ""
}
