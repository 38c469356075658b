package draw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/draw"
	"github.com/waitroom/waitroom/internal/draw/drandtest"
)

// pythonVerifier is examples/verify-draw, the verifier written apart from
// this package in Python's standard library.
const pythonVerifier = "../../examples/verify-draw/verify_draw.py"

// TestPythonAgrees: the Python verifier prints the very line draw.Verdict
// makes (and exits 0 or 1 with it) on the test vectors, on a record of
// 1,000 participants, and on that record changed in each kind of field
// once. The vectors, the 1,000 and one change run as commands; the other
// changes through the script's main in one interpreter (a python3 costs
// 0.5-2 s to start on the loaded machine). A machine without python3
// fails it: scripts/test.sh installs one.
func TestPythonAgrees(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run examples/verify-draw (scripts/test.sh installs it): %v", err)
	}
	dir := t.TempDir()
	base := thousand(t, true)
	type run struct {
		name, file, want string
		ok, command      bool
	}
	var runs []run
	write := func(b []byte) string {
		file := filepath.Join(dir, fmt.Sprintf("%02d.json", len(runs)))
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	// add runs file through what waitroom verify-draw --file says: a value
	// of the wrong type as read, or the verdict; entry is what it names
	// ("": matches).
	add := func(name, file, entry string) {
		r, err := draw.ReadRecord(file)
		var m *draw.Mismatch
		if err == nil {
			err = draw.Verify(r)
		}
		if entry == "" && err != nil || entry != "" && (!errors.As(err, &m) || m.Entry != entry) {
			t.Fatalf("%s: Go: %v, want %q named", name, err, entry)
		}
		want, ok := draw.Verdict(r)
		if m != nil {
			want, ok = m.Error(), false
		}
		runs = append(runs, run{name, file, want + "\n", ok, len(runs) < 4})
	}
	for _, tt := range []struct {
		name   string
		change func(r *draw.Record)
		file   string // a record kept as it is, instead of base changed
		entry  string // what Go's Verify names ("": matches)
	}{
		{"vector without a beacon", nil, "testdata/vector-without-beacon.json", ""},
		{"vector with a beacon", nil, "testdata/vector-with-beacon.json", ""},
		{"1,000 participants", func(*draw.Record) {}, "", ""},
		{"two places swapped", func(r *draw.Record) { swap(r.Order, 17, 18) }, "", "order[17]"},
		{"version", func(r *draw.Record) { r.Version = 2 }, "", "version"},
		{"a seed that is not one", func(r *draw.Record) { r.Seed = "zz" + r.Seed[2:] }, "", "seed"},
		{"another seed", func(r *draw.Record) { r.Seed = strings.Repeat("0", 64) }, "", "commitment"},
		{"the seed in capitals", func(r *draw.Record) { r.Seed = strings.ToUpper(r.Seed) }, "", ""},
		{"opensAt, at another offset", func(r *draw.Record) {
			r.OpensAt = r.OpensAt.Add(1500 * time.Millisecond).In(time.FixedZone("", 9*3600))
		}, "", "opensAt"},
		{"opensAtMs", func(r *draw.Record) { r.OpensAtMs++ }, "", "opensAt"},
		{"opensAt and opensAtMs alike", func(r *draw.Record) { r.OpensAtMs++; r.OpensAt = time.UnixMilli(r.OpensAtMs) }, "", "commitment"},
		{"the queue", func(r *draw.Record) { r.Queue = "sale2" }, "", "commitment"},
		{"the commitment", func(r *draw.Record) { r.Commitment = strings.Repeat("ab", 32) }, "", "commitment"},
		{"the beacon's round", func(r *draw.Record) { r.Beacon.Round++ }, "", "commitment"},
		{"the beacon's randomness", func(r *draw.Record) { r.Beacon.Randomness = strings.Repeat("cd", 32) }, "", "finalSeed"},
		{"no beacon", func(r *draw.Record) { r.Beacon = nil }, "", "commitment"},
		{"two participants swapped", func(r *draw.Record) { swap(r.Participants, 500, 501) }, "", "participants[501]"},
		{"a participant twice", func(r *draw.Record) { r.Participants[11] = r.Participants[10] }, "", "participants[11]"},
		{"a participant not in ASCII", func(r *draw.Record) { r.Participants[999] = "é\n\x01" }, "", "participants[999]"},
		{"a participant out of place, not in ASCII", func(r *draw.Record) { r.Participants[3] = "ü\t\"x\"" }, "", "participants[3]"},
		{"a participant in capitals", func(r *draw.Record) { r.Participants[5] = strings.ToUpper(r.Participants[5]) }, "", "participants[5]"},
		{"a participant left out", func(r *draw.Record) { r.Participants = slices.Delete(r.Participants, 7, 8) }, "", "participantsHash"},
		{"the participants' hash", func(r *draw.Record) { r.ParticipantsHash = strings.Repeat("ef", 32) }, "", "participantsHash"},
		{"the final seed", func(r *draw.Record) { r.FinalSeed = strings.Repeat("01", 32) }, "", "finalSeed"},
		{"the order cut short", func(r *draw.Record) { r.Order = r.Order[:999] }, "", "order length"},
		{"a place added", func(r *draw.Record) { r.Order = append(r.Order, r.Order[0]) }, "", "order length"},
		{"a ticket", func(r *draw.Record) { r.Tickets[640]++ }, "", "tickets[640]"},
		{"the first ticket", func(r *draw.Record) { r.FirstTicket-- }, "", "tickets[0]"},
		{"the tickets cut short", func(r *draw.Record) { r.Tickets = r.Tickets[:10] }, "", "tickets length"},
		{"the beacon's URL", func(r *draw.Record) { r.Beacon.URL = "http://127.0.0.1:2/drand" }, "", "commitment"},
	} {
		file := tt.file
		if file == "" {
			r := clone(t, base)
			tt.change(&r)
			b, _ := json.Marshal(r)
			file = write(b)
		}
		add(tt.name, file, tt.entry)
	}
	// Values Go's JSON does not take as the record's types (draw.Record
	// cannot hold them: the JSON is edited): both verifiers name them as
	// draw.DecodeRecord does.
	for _, tt := range []struct {
		name, field string
		i           int // the list's element; -1: the field itself
		v           any
		entry       string
	}{
		{"a ticket that is true", "tickets", 3, true, "tickets[3]"},
		{"a ticket that is 5.0", "tickets", 4, json.RawMessage("70005.0"), "tickets[4]"},
		{"a ticket past int64", "tickets", 5, json.RawMessage("9223372036854775808"), "tickets[5]"},
		{"a ticket that is a string", "tickets", 6, "70007", "tickets[6]"},
		{"a ticket that is null", "tickets", 7, nil, "tickets[7]"},
		{"the tickets not a list", "tickets", -1, "70001", "tickets"},
		{"an id that is a number", "participants", 2, json.RawMessage("1e3"), "participants[2]"},
		{"an id that is a list", "participants", 8, []string{"x"}, "participants[8]"},
		{"an id that is false", "participants", 9, false, "participants[9]"},
		{"an order entry that is an object", "order", 6, map[string]int{"a": 1}, "order[6]"},
		{"an order entry that is null", "order", 6, nil, "order[6]"},
		{"a seed that is a number", "seed", -1, 12, "seed"},
		{"a version that is true", "version", -1, true, "version"},
		{"opensAtMs with a fraction", "opensAtMs", -1, json.RawMessage("1798135200000.5"), "opensAtMs"},
		{"opensAt not a time", "opensAt", -1, "2026-12-24t18:00:00z", "opensAt"},
		{"a beacon round below 0", "beacon", -1, map[string]any{"url": "http://127.0.0.1:1/drand", "round": -1}, "beacon.round"},
		{"a queue that is a number", "queue", -1, 7, "queue"},
	} {
		b, _ := json.Marshal(base)
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber() // numbers as written
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if tt.i < 0 {
			m[tt.field] = tt.v
		} else {
			m[tt.field].([]any)[tt.i] = tt.v
		}
		b, _ = json.Marshal(m)
		add(tt.name, write(b), tt.entry)
	}
	var batch []string
	for _, r := range runs {
		if !r.command {
			batch = append(batch, r.file)
		}
	}
	said := pythonMain(t, python, batch)
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			if r.command {
				t.Parallel() // each waits on a python3 of its own
				runPython(t, python, r.want, map[bool]int{true: 0, false: 1}[r.ok], r.file)
				return
			}
			if got := said[r.file]; got.out != r.want || (got.rc == 0) != r.ok {
				t.Fatalf("Python's main printed %q, returned %d\nGo says             %q (ok %v)", got.out, got.rc, r.want, r.ok)
			}
		})
	}
}

type pythonSaid struct {
	rc  int
	out string
}

// pythonMain calls verify_draw.main([file]) on each file in one python3,
// and answers what each printed and returned.
func pythonMain(t *testing.T, python string, files []string) map[string]pythonSaid {
	t.Helper()
	const driver = `import contextlib, io, json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import verify_draw
for f in sys.argv[2:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = verify_draw.main([f])
    print(json.dumps({"file": f, "rc": rc, "out": out.getvalue()}))
`
	out, err := exec.Command(python, append([]string{"-c", driver, pythonVerifier}, files...)...).Output()
	if err != nil {
		t.Fatalf("python3 verify_draw.main: %v\n%s", err, out)
	}
	said := map[string]pythonSaid{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var s struct {
			File, Out string
			RC        int
		}
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("python3 verify_draw.main printed %q: %v", out, err)
		}
		said[s.File] = pythonSaid{s.RC, s.Out}
	}
	return said
}

// runPython runs the Python verifier with args and wants it to print want
// and exit with status (0 matches, 1 differs, 2 committed too late).
func runPython(t *testing.T, python, want string, status int, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(python, append([]string{pythonVerifier}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if status == 0 && err != nil || status != 0 && (!errors.As(err, &exit) || exit.ExitCode() != status) {
		t.Fatalf("python3 verify_draw.py %q: %v (want exit %d)\n%s%s", args, err, status, out.String(), errOut.String())
	}
	if got := out.String(); got != want {
		t.Fatalf("Python printed %q\nGo says      %q", got, want)
	}
}

// goSays is what waitroom verify-draw prints of c (cmd/waitroom/
// verifydraw.go's say), with the drand chain when not "", and its exit
// status.
func goSays(t *testing.T, c draw.Checked, chain string) (string, int) {
	t.Helper()
	line, ok := draw.Verdict(c.Record)
	var beacon string
	if ok && chain != "" {
		var err error
		beacon, err = draw.CheckBeacon(context.Background(), nil, chain, c.Record)
		var m *draw.Mismatch
		if errors.As(err, &m) {
			line, ok = m.Error(), false
		} else if err != nil {
			t.Fatal(err)
		}
	}
	out := line + "\n"
	if ok && beacon != "" {
		out += beacon + "\n"
	}
	for _, note := range c.Notes() {
		out += note + "\n"
	}
	switch {
	case !ok:
		return out, 1
	case c.LateNote() != "":
		return out + c.LateNote() + "\n", 2
	}
	return out, 0
}

// TestPythonReadsTheLedgerAsGoDoes: with --addr, the Python verifier reads
// GET /api/v1/queues/{q}/draw and says what waitroom verify-draw says
// (draw.Fetch, Ledger.Check, Verdict, Checked.Notes and LateNote), with
// the same exit status, of a record whose commitment is listed as drawn
// (after withdrawn ones, which it lists), listed but made only at the
// record's opening or after it, listed but not drawn, not listed, and of a
// ledger with no record yet.
func TestPythonReadsTheLedgerAsGoDoes(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run examples/verify-draw (scripts/test.sh installs it): %v", err)
	}
	r, err := draw.ReadRecord("testdata/vector-with-beacon.json")
	if err != nil {
		t.Fatal(err)
	}
	entry := func(hash string, madeAt time.Time, state draw.State) draw.Committed {
		return draw.Committed{Hash: hash, Queue: "sale", OpensAt: r.OpensAt, MadeAt: madeAt, State: state, Beacon: r.Beacon}
	}
	other := strings.Repeat("ab", 32)
	rerolled := entry(strings.Repeat("cd", 32), r.OpensAt.Add(-72*time.Hour), draw.Withdrawn)
	rerolled.OpensAt, rerolled.WithdrawnAt = r.OpensAt.Add(-90*time.Minute), r.OpensAt.Add(-48*time.Hour+1500*time.Microsecond)
	undated := entry(strings.Repeat("ef", 32), r.OpensAt.Add(-60*time.Hour), draw.Withdrawn) // no withdrawnAt
	movedOpening := entry(r.Commitment, r.OpensAt.Add(-time.Second), draw.Drawn)
	movedOpening.OpensAt = r.OpensAt.Add(-time.Minute)
	for _, tt := range []struct {
		name   string
		ledger draw.Ledger
	}{
		{"listed", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{
			entry(other, r.OpensAt.Add(-48*time.Hour), draw.Drawn), entry(r.Commitment, r.OpensAt.Add(-time.Hour), draw.Drawn)}}},
		{"listed after withdrawn ones", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{
			rerolled, undated, entry(r.Commitment, r.OpensAt.Add(-time.Hour), draw.Drawn), entry(other, r.OpensAt, draw.Withdrawn)}}},
		{"made at the opening", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{
			rerolled, entry(r.Commitment, r.OpensAt, draw.Drawn)}}},
		{"made only after the opening", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{
			entry(r.Commitment, r.OpensAt.Add(250*time.Millisecond), draw.Drawn)}}},
		{"made before the record's opening, after the ledger's", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{movedOpening}}},
		{"listed, still pending", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{
			entry(r.Commitment, r.OpensAt.Add(-time.Hour), draw.Pending)}}},
		{"listed, withdrawn", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{
			entry(r.Commitment, r.OpensAt.Add(-time.Hour), draw.Withdrawn)}}},
		{"not listed", draw.Ledger{Queue: "sale", Record: &r, Commitments: []draw.Committed{entry(other, r.OpensAt, draw.Drawn)}}},
		{"not drawn yet", draw.Ledger{Queue: "sale", Commitments: []draw.Committed{entry(other, r.OpensAt.Add(-time.Hour), draw.Pending)}}},
		{"nothing yet", draw.Ledger{Queue: "sale", Commitments: []draw.Committed{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each waits on a python3 of its own
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				json.NewEncoder(w).Encode(tt.ledger)
			}))
			defer srv.Close()
			l, err := draw.Fetch(context.Background(), nil, srv.URL, "sale", "")
			if err != nil {
				t.Fatal(err)
			}
			want, status := "", 1
			if c, err := l.Check("sale"); err != nil {
				want = err.Error() + "\n"
			} else {
				want, status = goSays(t, c, "")
			}
			runPython(t, python, want, status, "--addr", srv.URL, "--queue", "sale")
		})
	}
}

// thousand is a drawn record of 1,000 participants, repeatably.
func thousand(t *testing.T, beacon bool) draw.Record {
	t.Helper()
	src := mrand.NewChaCha8([32]byte{57})
	var seed draw.Seed
	src.Read(seed[:])
	p := draw.NewParticipants([]byte("a thousand"))
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = p.Of("sale", fmt.Sprint("user-", i)).ID
	}
	var named, read *draw.Beacon
	if beacon {
		named = &draw.Beacon{URL: "http://127.0.0.1:1/drand", Round: 4242}
		read = &draw.Beacon{URL: named.URL, Round: named.Round, Randomness: strings.Repeat("5a", 32)}
	}
	c := draw.NewCommittedWith(seed, "sale", time.Date(2026, 12, 24, 18, 0, 0, 0, time.UTC), named)
	r, err := draw.Draw(c, ids, read, 70_001, time.Date(2026, 12, 24, 18, 0, 2, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func clone(t *testing.T, r draw.Record) draw.Record {
	t.Helper()
	b, _ := json.Marshal(r)
	var c draw.Record
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func swap(s []string, i, j int) { s[i], s[j] = s[j], s[i] }

// TestPythonChecksTheBeaconAsGoDoes: with --drand, both verifiers ask the
// chain (here drandtest, a local server speaking drand's HTTP API) for
// its info and the record's round: a record drawn with the round's
// randomness matches; one drawn, consistently, with another value is
// pointed at beacon.randomness; one whose round is less than a full period
// after the opening at beacon.round; one with no beacon says so.
func TestPythonChecksTheBeaconAsGoDoes(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run examples/verify-draw (scripts/test.sh installs it): %v", err)
	}
	ctx := context.Background()
	chain := drandtest.New(t, time.Now().Add(-time.Hour), 3*time.Second)
	opens := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	named, err := draw.NewDrand(chain.URL, nil).Name(ctx, opens)
	if err != nil {
		t.Fatal(err)
	}
	read, err := draw.NewDrand(chain.URL, nil).Read(ctx, named)
	if err != nil {
		t.Fatal(err)
	}
	forged := read
	forged.Randomness = strings.Repeat("0f", 32)
	early := draw.Beacon{URL: named.URL, Round: named.Round - 1}
	earlyRead, err := draw.NewDrand(chain.URL, nil).Read(ctx, early)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{strings.Repeat("00", 16), strings.Repeat("11", 16), strings.Repeat("22", 16), strings.Repeat("33", 16), strings.Repeat("44", 16)}
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		beacon *draw.Beacon
		entry  string
	}{
		{"the round's randomness", &read, ""},
		{"another randomness", &forged, "beacon.randomness"},
		{"a round less than a period after the opening", &earlyRead, "beacon.round"},
		{"no beacon", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c draw.Committed
			if tt.beacon != nil {
				c = draw.NewCommitted("sale", opens, &draw.Beacon{URL: tt.beacon.URL, Round: tt.beacon.Round})
			} else {
				c = draw.NewCommitted("sale", opens, nil)
			}
			r, err := draw.Draw(c, ids, tt.beacon, 1, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			b, _ := json.Marshal(r)
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if line, ok := draw.Verdict(r); !ok {
				t.Fatalf("the record itself: %s", line)
			}
			_, err = draw.CheckBeacon(ctx, nil, chain.URL, r)
			var m *draw.Mismatch
			if tt.entry == "" && err != nil || tt.entry != "" && (!errors.As(err, &m) || m.Entry != tt.entry) {
				t.Fatalf("CheckBeacon: %v; want %q named", err, tt.entry)
			}
			want, status := goSays(t, draw.Checked{Record: r}, chain.URL)
			runPython(t, python, want, status, "--drand", chain.URL, file)
		})
	}
}
