package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestFrontOutlivesWaitroom (issue 49): the shop's nginx and Caddy, on
// their shipped configurations, asking waitroom's decision, while visitors
// browse and buy; waitroom stops in the middle of it. Before, every answer
// is the decision's. After, the pages no route protects are still the
// shop's (GET and HEAD go on unjudged: nginx used to answer 500 for every
// page), while the protected routes, the session-protected GET /checkout
// included, and every other POST are answered 503 with Retry-After, and
// none of them reaches the shop. At no moment does a visitor get a 500.
func TestFrontOutlivesWaitroom(t *testing.T) {
	for _, f := range apptest.Fronts {
		if !f.Decides() {
			continue // waitroom proxy is the front: with it down nothing answers
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			frontOutlivesWaitroom(t, f)
		})
	}
}

func frontOutlivesWaitroom(t *testing.T, f apptest.Front) {
	var reached sync.Map // "METHOD /path" → the shop's count
	count := func(r *http.Request) {
		n, _ := reached.LoadOrStore(r.Method+" "+r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { count(r); fmt.Fprint(w, "the shop's page") })
	shop := &apptest.UpstreamShop{Server: httptest.NewServer(mux)}
	t.Cleanup(shop.Server.Close)
	// BootProxy's routes: POST /buy (spent) and GET /checkout (kept); the
	// shipped configurations name "checkout" among the pages to refuse.
	p := apptest.BootProxyBehind(t, f, apptest.Backend{Name: "embedded"}, shop, nil)
	p.SetPaused(true) // a busy night: nobody is let straight in

	type visit struct {
		method, path string
		// before and away: the statuses allowed while waitroom answers
		// and once it is gone.
		before, away []int
	}
	visits := []visit{
		{"GET", "/", []int{200}, []int{200}},
		{"GET", "/product/7", []int{200}, []int{200}},
		{"HEAD", "/product/7", []int{200}, []int{200}},
		{"GET", "/checkout", []int{401}, []int{503}},
		{"POST", "/buy", []int{401}, []int{503}},
		{"POST", "/newsletter", []int{200}, []int{503}},
	}
	var gone atomic.Bool
	var mu sync.Mutex
	seen := map[string]int{} // "phase METHOD /path status" → count
	var wrong []string
	deadline := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			client := &http.Client{Timeout: 15 * time.Second}
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if time.Now().After(deadline) {
					return
				}
				v := visits[i%len(visits)]
				wasGone := gone.Load()
				req, _ := http.NewRequest(v.method, p.Base+v.path, nil)
				req.Header.Set("Accept", "application/json")
				res, err := client.Do(req)
				if err != nil {
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("%s %s: %v", v.method, v.path, err))
					mu.Unlock()
					continue
				}
				res.Body.Close()
				phase, allowed := "before", v.before
				if wasGone {
					phase, allowed = "away", v.away
				}
				ok := false
				for _, s := range allowed {
					ok = ok || res.StatusCode == s
				}
				// A request sent just before waitroom went may be answered
				// either way; one sent after it went never as before.
				if !ok && !wasGone {
					for _, s := range v.away {
						ok = ok || res.StatusCode == s
					}
				}
				if res.StatusCode == 503 && res.Header.Get("Retry-After") == "" {
					ok = false
				}
				mu.Lock()
				seen[fmt.Sprintf("%s %s %s %d", phase, v.method, v.path, res.StatusCode)]++
				if !ok {
					wrong = append(wrong, fmt.Sprintf("%s: %s %s → %d (Retry-After %q)", phase, v.method, v.path, res.StatusCode, res.Header.Get("Retry-After")))
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(1 * time.Second) // the load runs with waitroom up
	if err := p.Main.Close(); err != nil {
		t.Errorf("stopping waitroom: %v", err)
	}
	gone.Store(true)
	time.Sleep(2 * time.Second) // and with it gone
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("answers: %v", seen)
	if len(wrong) > 0 {
		t.Errorf("%d wrong answers, the first few: %q", len(wrong), wrong[:min(len(wrong), 10)])
	}
	for _, v := range visits {
		if v.away[0] == 200 && seen[fmt.Sprintf("away %s %s 200", v.method, v.path)] == 0 {
			t.Errorf("%s %s was never answered by the shop with waitroom gone", v.method, v.path)
		}
		if v.away[0] == 503 && seen[fmt.Sprintf("away %s %s 503", v.method, v.path)] == 0 {
			t.Errorf("%s %s was never refused with waitroom gone", v.method, v.path)
		}
	}
	for _, route := range []string{"POST /buy", "GET /checkout"} {
		if n, ok := reached.Load(route); ok {
			t.Errorf("%s reached the shop %d times without an entry", route, n.(*atomic.Int64).Load())
		}
	}
}
