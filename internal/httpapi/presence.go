package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
)

// presence takes a page's beacon (issue 55): {"hidden": true} when it was
// hidden, false when shown again, sent with navigator.sendBeacon on
// visibilitychange. It is a status read whose answer nobody reads: the
// caller is marked as the word says (hidden whatever their position,
// visible within the reach of seen marks, as a poll: queue.Service.Status),
// and a hidden place is then skipped as a no-show only after
// abandonAfterSecondsHidden. 204 also when the caller holds no
// place: nobody reads a beacon's answer. Checked in the order of
// entries/me: identity (401), the body (400 invalid_body), the queue's
// name and whether it exists (404).
func (s *Server) presence(w http.ResponseWriter, r *http.Request) {
	user, ok := s.user(w, r)
	if !ok {
		return
	}
	hidden, err := presenceBody(r)
	if err == nil {
		_, err = s.Queue.Status(r.Context(), r.PathValue("queue"), user, hidden)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// presenceBody reads the beacon's body: exactly one object with the one
// field hidden, a boolean. sendBeacon sends a string as text/plain (a
// Blob typed application/json is not a CORS-safelisted type, which
// browsers have refused to send), so text/plain is taken as well as
// application/json, and no type at all; anything else is refused.
// smallBody has bounded it already.
func presenceBody(r *http.Request) (bool, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "text/plain" && mt != "application/json" {
			return false, errWith(errBadBody, `the body must be {"hidden": true} or {"hidden": false}, as text/plain or application/json`)
		}
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return false, errWith(errBadBody, "reading the body: "+err.Error())
	}
	var body struct {
		Hidden *bool `json:"hidden"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' || dec.Decode(&body) != nil || body.Hidden == nil {
		return false, errWith(errBadBody, `the body must be {"hidden": true} or {"hidden": false}`)
	}
	if _, err := dec.Token(); err != io.EOF {
		return false, errWith(errBadBody, "the body must hold exactly one JSON object")
	}
	return *body.Hidden, nil
}

// hiddenQuery reads a status poll's hidden=1: the page asking is hidden
// (issue 55). Absent or 0: visible.
func hiddenQuery(r *http.Request) (bool, error) {
	if r.URL.RawQuery == "" { // the common poll: no query to parse
		return false, nil
	}
	switch r.URL.Query().Get("hidden") {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, errWith(errBadRequest, "hidden must be 1 or 0")
}
