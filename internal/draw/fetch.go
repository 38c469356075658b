package draw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// ReadRecord reads a record's JSON (as GET /api/v1/queues/{q}/draw
// answers it under "record", or a file saved from it) from file: a value
// of the wrong type is a *Mismatch (DecodeRecord).
func ReadRecord(file string) (Record, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Record{}, err
	}
	r, err := DecodeRecord(b)
	var m *Mismatch
	if err != nil && !errors.As(err, &m) {
		return Record{}, fmt.Errorf("%s is not a draw's record: %w", file, err)
	}
	return r, err
}

// Ledger is a queue's draws as GET /api/v1/queues/{q}/draw publishes them:
// every commitment ever made, oldest first, and the record of the newest
// drawn one (or of the one asked for).
type Ledger struct {
	Queue       string      `json:"queue"`
	Commitments []Committed `json:"commitments"`
	Record      *Record     `json:"record,omitempty"`
}

// fetchTimeout bounds reading a ledger: a record of 100,000 participants
// is some 8 MB.
const fetchTimeout = 2 * time.Minute

// maxLedger bounds what is read of one: a record of a million participants.
const maxLedger = 256 << 20

// Fetch reads queue's ledger from the waitroom instance at addr (its base
// URL): GET addr/api/v1/queues/{queue}/draw, with ?commitment= when
// commitment is not "" (that commitment's record). A public route: no
// secret is sent. client nil: http.DefaultClient; every call is bounded
// by fetchTimeout. A record with a value of the wrong type is a
// *Mismatch (DecodeRecord).
func Fetch(ctx context.Context, client *http.Client, addr, queue, commitment string) (Ledger, error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	u := strings.TrimRight(addr, "/") + "/api/v1/queues/" + url.PathEscape(queue) + "/draw"
	if commitment != "" {
		u += "?commitment=" + url.QueryEscape(commitment)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Ledger{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Ledger{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLedger))
	if err != nil {
		return Ledger{}, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
			return Ledger{}, fmt.Errorf("GET %s: %s (%s)", u, e.Error.Message, e.Error.Code)
		}
		return Ledger{}, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	// The record apart, so that a value of the wrong type in it is named
	// (DecodeRecord).
	var l struct {
		Ledger
		Record json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return Ledger{}, fmt.Errorf("GET %s: not a queue's draws: %w", u, err)
	}
	if len(l.Record) == 0 || string(l.Record) == "null" {
		return l.Ledger, nil
	}
	r, err := DecodeRecord(l.Record)
	var m *Mismatch
	if errors.As(err, &m) {
		return l.Ledger, m
	} else if err != nil {
		return Ledger{}, fmt.Errorf("GET %s: not a queue's draws: %w", u, err)
	}
	l.Ledger.Record = &r
	return l.Ledger, nil
}

// ErrNotDrawn: the ledger has no record to check yet.
var ErrNotDrawn = errors.New("no draw is published yet")

// Checked is a ledger's record with what the ledger says of it: Entry,
// its commitment as listed (drawn), and Withdrawn, the queue's
// commitments withdrawn before it, oldest first: a re-roll (an opening
// moved, the queue made again) leaves one each, and shows.
type Checked struct {
	Record    Record
	Entry     Committed
	Withdrawn []Committed
}

// Check finds the ledger's record and its commitment in the ledger: the
// record must be queue's, and its commitment listed there as drawn
// (published before the draw, or the seed could have been chosen
// afterwards; a commitment pending or withdrawn was not the one drawn
// from). The ledger is queue's (Fetch asked for it), so every withdrawn
// entry before the record's is one of its re-rolls.
func (l Ledger) Check(queue string) (Checked, error) {
	if l.Record == nil {
		if n := len(l.Commitments); n > 0 {
			c := l.Commitments[n-1]
			return Checked{}, fmt.Errorf("queue %s: %w (its newest commitment, %s, is %s, opening %s)",
				queue, ErrNotDrawn, c.Hash, c.State, c.OpensAt.UTC().Format(time.RFC3339))
		}
		return Checked{}, fmt.Errorf("queue %s: %w (no commitment either)", queue, ErrNotDrawn)
	}
	r := *l.Record
	if r.Queue != queue {
		return Checked{}, fmt.Errorf("the record is queue %q's, not %q's", r.Queue, queue)
	}
	var withdrawn []Committed
	for _, c := range l.Commitments {
		switch {
		case c.Hash != r.Commitment && c.State == Withdrawn:
			withdrawn = append(withdrawn, c)
		case c.Hash != r.Commitment:
		case c.State != Drawn:
			return Checked{}, fmt.Errorf("ledger: the record's commitment %s is listed %s, not drawn", r.Commitment, c.State)
		default:
			return Checked{Record: r, Entry: c, Withdrawn: withdrawn}, nil
		}
	}
	return Checked{}, fmt.Errorf("ledger: the record's commitment %s is not among queue %s's %d commitments", r.Commitment, queue, len(l.Commitments))
}

// Notes are the lines both verifiers print after the verdict: one per
// commitment withdrawn before the record's ("withdrawn before it: …"),
// which does not make the check fail (moving an opening is allowed; it
// must only show).
func (c Checked) Notes() []string {
	notes := make([]string, len(c.Withdrawn))
	for i, w := range c.Withdrawn {
		notes[i] = fmt.Sprintf("withdrawn before it: %s (opening %s, withdrawn %s)",
			w.Hash, w.OpensAt.UTC().Format(time.RFC3339Nano), w.WithdrawnAt.UTC().Format(time.RFC3339Nano))
	}
	return notes
}

// LateNote is what a check says when the record's commitment was made
// only at its opening or after it (madeAt not before the record's
// opensAt), "" otherwise. Such a commitment was published when nobody
// could join any more, so it cannot show the seed was fixed before the
// list was known: the record may match it, and still prove nothing. Both
// verifiers print it last, after "matches", and exit 2.
func (c Checked) LateNote() string {
	opens := time.UnixMilli(c.Record.OpensAtMs)
	if c.Entry.MadeAt.Before(opens) {
		return ""
	}
	return fmt.Sprintf("committed only at the opening: commitment %s was made at %s, not before the opening at %s: "+
		"the record matches it, but a commitment that late proves nothing",
		c.Entry.Hash, c.Entry.MadeAt.UTC().Format(time.RFC3339Nano), opens.UTC().Format(time.RFC3339Nano))
}
