package httpapi

import (
	"encoding/csv"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/queue"
)

// An upload of access codes (POST /admin/v1/queues/{queue}/codes, issue
// 53): a shop's CRM export as CSV, or a list as JSON (waitroom codes
// generate). A code is kept by its hash only; what the answer says of the
// codes it turned down is where they were, never what they were.

const (
	// maxCodes bounds the codes of one upload: a big sale's list in one
	// request (waitroom codes generate sends larger lists in chunks).
	maxCodes = 100_000
	// maxCodesBody bounds the upload's body, for this route only: 100,000
	// codes of up to accesscode.MaxLength symbols, with their lane, uses
	// and expiry, in CSV or JSON.
	maxCodesBody = 16 << 20
	// codesReadTimeout is how long the upload's body may take to arrive:
	// more than the server's ReadTimeout, which a request head and a small
	// body are held to.
	codesReadTimeout = 2 * time.Minute
	// maxRejectedLines is how many rejected lines the answer lists.
	maxRejectedLines = 20
)

// codesUploadJSON is the JSON form of an upload: one lane, uses and
// expiry for every code.
type codesUploadJSON struct {
	Lane      string     `json:"lane"`
	Uses      *int64     `json:"uses"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Codes     []string   `json:"codes"`
}

// codesAddedJSON answers an upload: RejectedLines are the first rejected
// codes' CSV line numbers (the header is line 1) or JSON indexes (from 0).
type codesAddedJSON struct {
	Queue         string `json:"queue"`
	Added         int    `json:"added"`
	Duplicates    int    `json:"duplicates"`
	Rejected      int    `json:"rejected"`
	RejectedLines []int  `json:"rejectedLines"`
}

// addCodes keeps an upload of access codes for the queue: CSV (text/csv)
// with a header naming its columns among code, lane, uses and expiresAt
// (code and lane required), or JSON. A code is rejected, and the rest
// kept, when it is malformed, its lane is not one of the queue's lanes
// that take codes (in its settings or a phase's), or its uses are outside
// 1 to accesscode.MaxUses (a store refuses the whole upload for one such).
// A code held already, or twice in the upload, is a duplicate.
func (s *Server) addCodes(w http.ResponseWriter, r *http.Request) {
	q := r.PathValue("queue")
	c, err := s.Operate.Config(r.Context(), q) // 400 bad name, 404 no such queue
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(codesReadTimeout))
	b := &codesBatch{lanes: codeLanes(c), seen: map[string]bool{}, rejectedLines: []int{}}
	if media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); media == "text/csv" {
		err = b.readCSV(http.MaxBytesReader(w, r.Body, maxCodesBody))
	} else {
		err = b.readJSON(w, r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	added, err := s.Operate.AddCodes(r.Context(), q, b.codes)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := codesAddedJSON{Queue: q, Added: added.Added, Duplicates: added.Duplicates + b.duplicates, Rejected: b.rejected, RejectedLines: b.rejectedLines}
	s.logger.InfoContext(r.Context(), "access codes added", "queue", q, "added", out.Added, "duplicates", out.Duplicates, "rejected", out.Rejected)
	writeJSON(w, http.StatusOK, out)
}

// codeLanes are the lanes of a queue of config c that take codes: its own
// and every phase's (a phase may replace the lanes, and codes are uploaded
// before it starts).
func codeLanes(c queue.Config) map[string]bool {
	out := map[string]bool{}
	note := func(c queue.Config) {
		for _, l := range c.Lanes {
			if l.Codes {
				out[l.Name] = true
			}
		}
	}
	note(c)
	for _, p := range c.Phases {
		note(c.InForce(p.StartsAt).Config)
	}
	return out
}

// codesBatch is an upload as it is read.
type codesBatch struct {
	lanes         map[string]bool
	seen          map[string]bool // the hashes read so far
	codes         []accesscode.Code
	read          int
	duplicates    int
	rejected      int
	rejectedLines []int
}

// add takes one code read at line (or index) at.
func (b *codesBatch) add(at int, code, lane string, uses int64, expiresAt time.Time) error {
	if b.read++; b.read > maxCodes {
		return errWith(errTooLarge, "at most 100000 codes in one request")
	}
	h, err := accesscode.Hash(code)
	if err != nil || !b.lanes[lane] || uses < 1 || uses > accesscode.MaxUses {
		b.reject(at)
		return nil
	}
	if b.seen[h] {
		b.duplicates++
		return nil
	}
	b.seen[h] = true
	b.codes = append(b.codes, accesscode.Code{Hash: h, Lane: lane, Uses: uses, ExpiresAt: expiresAt})
	return nil
}

func (b *codesBatch) reject(at int) {
	b.rejected++
	if len(b.rejectedLines) < maxRejectedLines {
		b.rejectedLines = append(b.rejectedLines, at)
	}
}

// readJSON reads the JSON form: every code in its one lane.
func (b *codesBatch) readJSON(w http.ResponseWriter, r *http.Request) error {
	var up codesUploadJSON
	if err := decodeJSONUpTo(w, r, &up, maxCodesBody); err != nil {
		return err
	}
	uses := int64(1)
	if up.Uses != nil {
		uses = *up.Uses
	}
	var expiresAt time.Time
	if up.ExpiresAt != nil {
		expiresAt = up.ExpiresAt.UTC()
	}
	if len(up.Codes) > maxCodes {
		return errWith(errTooLarge, "at most 100000 codes in one request")
	}
	for i, code := range up.Codes {
		if err := b.add(i, code, up.Lane, uses, expiresAt); err != nil {
			return err
		}
	}
	return nil
}

// codeColumns are the columns a CSV upload may have.
var codeColumns = []string{"code", "lane", "uses", "expiresAt"}

// readCSV reads the CSV form as it streams in, one record at a time.
func (b *codesBatch) readCSV(body io.Reader) error {
	cr := csv.NewReader(body)
	cr.ReuseRecord, cr.FieldsPerRecord, cr.TrimLeadingSpace = true, -1, true
	first, err := cr.Read()
	if err != nil {
		return csvError(err, "a CSV upload starts with a header line naming its columns: code,lane[,uses][,expiresAt]")
	}
	head := slices.Clone(first) // the reader reuses its records
	col, err := csvColumns(head)
	if err != nil {
		return err
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		var bad *csv.ParseError
		if errors.As(err, &bad) { // a broken line is a rejected code; the rest go on
			b.reject(bad.StartLine)
			continue
		}
		if err != nil {
			return csvError(err, "reading the CSV")
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(head) {
			b.reject(line)
			continue
		}
		if err := b.addRecord(line, rec, col); err != nil {
			return err
		}
	}
}

// addRecord takes one CSV record of the header's width, its columns at
// col's indexes (-1: none).
func (b *codesBatch) addRecord(line int, rec []string, col map[string]int) error {
	field := func(name string) string {
		if i := col[name]; i >= 0 {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	uses, expiresAt := int64(1), time.Time{}
	var err error
	if v := field("uses"); v != "" {
		uses, err = strconv.ParseInt(v, 10, 64)
	}
	if v := field("expiresAt"); v != "" && err == nil {
		expiresAt, err = time.Parse(time.RFC3339, v)
	}
	if err != nil {
		b.reject(line)
		return nil
	}
	return b.add(line, field("code"), field("lane"), uses, expiresAt.UTC())
}

// csvColumns reads the header: each column's index by name (-1: absent).
func csvColumns(head []string) (map[string]int, error) {
	col := map[string]int{}
	for _, name := range codeColumns {
		col[name] = -1
	}
	present := 0
	for i, h := range head {
		name := ""
		for _, c := range codeColumns {
			if strings.EqualFold(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")), c) {
				name = c
			}
		}
		if name == "" || col[name] >= 0 {
			return nil, errWith(errBadRequest, "the CSV's header names each of code, lane, uses and expiresAt at most once, and nothing else; column "+strconv.Itoa(i+1)+" is not one of them")
		}
		col[name] = i
		present++
	}
	if col["code"] < 0 || col["lane"] < 0 {
		return nil, errWith(errBadRequest, "the CSV's header must name the columns code and lane")
	}
	return col, nil
}

// csvError is a CSV upload that cannot be read on: too large (413), else
// 400 saying what. The reader's own message is left out: it may quote the
// line, and a line holds a code.
func csvError(err error, what string) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errWith(errTooLarge, "at most 16 MiB in one request")
	}
	return errWith(errBadRequest, what)
}
