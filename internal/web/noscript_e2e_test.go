package web_test

import (
	"fmt"
	"html"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// refreshTo is a page's <meta http-equiv="refresh">: after how long, to
// where.
var refreshTo = regexp.MustCompile(`<meta http-equiv="refresh" content="(\d+); url=([^"]+)">`)

// curlPage fetches url with curl alone, keeping cookies in jar: the page,
// and the refresh it asks for (none: -1).
func curlPage(t *testing.T, jar, url string) (page string, after int, next string) {
	t.Helper()
	out, err := exec.Command("curl", "--silent", "--show-error", "--max-time", "30",
		"--cookie", jar, "--cookie-jar", jar, "--header", "Accept-Language: en", url).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", url, err)
	}
	page = string(out)
	m := refreshTo.FindStringSubmatch(page)
	if m == nil {
		return page, -1, ""
	}
	after, _ = strconv.Atoi(m[1])
	return page, after, html.UnescapeString(m[2])
}

// Without JavaScript: curl alone, following the pages' refreshes with the
// waits they ask for, joins a queue whose join policy is any and reaches
// READY; under challenge the page says why it cannot.
func TestNoScriptCurl(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Missing(t, "curl (scripts/test.sh installs it): %v", err)
	}
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)
	in.PutQueue("ns-any", map[string]any{"entry": "any", "paused": true, "message": "Doors open at nine."})
	in.PutQueue("ns-pow", map[string]any{"entry": "challenge"})
	in.PutQueue("ns-closed", map[string]any{"entry": "any", "closesAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
	in.PutQueue("ns-draw", map[string]any{"entry": "any", "paused": true, "queueingMethod": "random"})
	jar := filepath.Join(t.TempDir(), "cookies")

	// The page with JavaScript sends a browser without it on (<noscript>).
	page, after, next := curlPage(t, jar, in.Base+"/q/ns-any")
	if after != 0 || !strings.Contains(page, "<noscript><meta http-equiv=\"refresh\"") || next != "/q/ns-any/noscript?lang=en" {
		t.Fatalf("the page's way without JavaScript: refresh %d to %q", after, next)
	}
	var states []string
	released := false
	for step := 0; step < 12; step++ {
		page, after, next = curlPage(t, jar, in.Base+next)
		state := regexp.MustCompile(`data-state="([a-z]+)"`).FindStringSubmatch(page)
		if state == nil {
			t.Fatalf("step %d: no state in the page: %.400s", step, page)
		}
		states = append(states, fmt.Sprintf("%s (refresh %d s)", state[1], after))
		if state[1] == "ready" {
			if !strings.Contains(page, "It&#39;s your turn") || !strings.Contains(page, "Doors open at nine.") {
				t.Errorf("READY page: %.600s", page)
			}
			break
		}
		if state[1] != "waiting" || after < 1 || after > 12 || !strings.Contains(next, "joined=1") {
			t.Fatalf("step %d: %s, refresh %d s to %q: %.600s", step, state[1], after, next, page)
		}
		if !strings.Contains(page, `<span id="position">1</span>`) || !strings.Contains(page, "Doors open at nine.") {
			t.Errorf("step %d: the waiting page lacks the place or the message: %.600s", step, page)
		}
		if !released && !strings.Contains(page, `<dd id="eta">Not known right now <span class="eta-why">The sale is paused</span></dd>`) {
			t.Errorf("step %d, paused: the wait is not said to be unknown for the pause: %.1200s", step, page)
		}
		if !released { // in line: the admin lets people in
			in.PatchQueue("ns-any", map[string]any{"paused": false})
			released = true
		}
		time.Sleep(time.Duration(after) * time.Second) // as the page asks
	}
	t.Logf("without JavaScript: %s", strings.Join(states, " → "))
	if !strings.HasPrefix(states[len(states)-1], "ready") {
		t.Fatalf("never READY: %v", states)
	}
	if st := in.Do("GET", "/admin/v1/queues/ns-any", in.AdminAuth(), nil); st.Num("admittedTotal") != 1 {
		t.Errorf("admitted %v, want the one curl", st.Num("admittedTotal"))
	}

	// A line that moves slowly: the page says the wait's range.
	in.PutQueue("ns-range", map[string]any{"entry": "any", "paused": true})
	for i := range 3 {
		in.Do("POST", "/api/v1/queues/ns-range/entries", in.As(fmt.Sprintf("ns-range-%d", i)), nil)
	}
	ranged := filepath.Join(t.TempDir(), "ranged")
	curlPage(t, ranged, in.Base+"/q/ns-range/noscript?lang=en")
	in.PatchQueue("ns-range", map[string]any{"paused": false, "ratePerSecond": 0.02, "batchSize": 1})
	page, _, _ = curlPage(t, ranged, in.Base+"/q/ns-range/noscript?lang=en&joined=1")
	if !regexp.MustCompile(`<dd id="eta">(About \d+–\d+ min|Up to about \d+ min)</dd>`).MatchString(page) {
		t.Errorf("a slow line without JavaScript: no range of minutes for the wait: %.1200s", page)
	}

	// Under challenge the page says plainly why it cannot, and takes nothing.
	page, after, _ = curlPage(t, jar, in.Base+"/q/ns-pow/noscript?lang=en")
	if !strings.Contains(page, `data-state="challenge"`) || !strings.Contains(page, "This line needs JavaScript") || after != -1 {
		t.Errorf("under challenge: refresh %d, %.600s", after, page)
	}
	if st := in.Do("GET", "/admin/v1/queues/ns-pow", in.AdminAuth(), nil); st.Num("length") != 0 {
		t.Errorf("under challenge a place was taken: length %v", st.Num("length"))
	}

	// A line that draws shows no place, says it is a draw, in the footer too.
	page, _, _ = curlPage(t, jar, in.Base+"/q/ns-draw/noscript?lang=ko")
	if !strings.Contains(page, `data-state="waiting"`) || strings.Contains(page, `id="position"`) ||
		!strings.Contains(page, `id="draw-note"`) || !strings.Contains(page, "추첨마다 같은 기회") {
		t.Errorf("a drawn line without JavaScript: %.1200s", page)
	}

	// A closed line says so, in the visitor's language, and takes nothing.
	page, after, _ = curlPage(t, jar, in.Base+"/q/ns-closed/noscript?lang=ja")
	if !strings.Contains(page, `data-state="closed"`) || !strings.Contains(page, "この列の受付は終了しました") || after != -1 {
		t.Errorf("a closed line: refresh %d, %.600s", after, page)
	}
	if st := in.Do("GET", "/admin/v1/queues/ns-closed", in.AdminAuth(), nil); st.Num("length") != 0 {
		t.Errorf("a closed line took a place: length %v", st.Num("length"))
	}

	// Sold out: whoever is in line is told so, keeps their place and the
	// page refreshes as one in line when the line says; a newcomer is told
	// so and the page refreshes as a first visit; a restock gives the
	// place back.
	in.PutQueue("ns-sold", map[string]any{"entry": "any", "paused": true})
	held := filepath.Join(t.TempDir(), "held")
	if page, _, _ = curlPage(t, held, in.Base+"/q/ns-sold/noscript?lang=en"); !strings.Contains(page, `<span id="position">1</span>`) {
		t.Fatalf("no place in ns-sold: %.600s", page)
	}
	in.Do("POST", "/admin/v1/queues/ns-sold/sold-out", in.AdminAuth(), nil)
	page, after, next = curlPage(t, held, in.Base+"/q/ns-sold/noscript?lang=en&joined=1")
	if !strings.Contains(page, `data-state="soldout"`) || !strings.Contains(page, "You keep your place in line") ||
		strings.Contains(page, `id="position"`) || after < 24 || after > 36 || !strings.Contains(next, "joined=1") {
		t.Errorf("sold out, in line: refresh %d s to %q, %.900s", after, next, page)
	}
	page, after, next = curlPage(t, filepath.Join(t.TempDir(), "newcomer"), in.Base+"/q/ns-sold/noscript?lang=ja")
	if !strings.Contains(page, `data-state="soldout"`) || !strings.Contains(page, "完売しました") ||
		!strings.Contains(page, "再入荷があれば、このページから自動で列に並びます") || after != 30 || strings.Contains(next, "joined") {
		t.Errorf("sold out, a newcomer: refresh %d s to %q, %.900s", after, next, page)
	}
	in.Do("POST", "/admin/v1/queues/ns-sold/restock", in.AdminAuth(), nil)
	if page, _, _ = curlPage(t, held, in.Base+"/q/ns-sold/noscript?lang=en&joined=1"); !strings.Contains(page, `<span id="position">1</span>`) {
		t.Errorf("after the restock the place is not back: %.900s", page)
	}
}
