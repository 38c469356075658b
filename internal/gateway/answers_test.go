package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// plainAPI is the least of waitroom's API a gateway without protected
// routes needs: somewhere to put its own routes, and error answers.
type plainAPI struct{ *http.ServeMux }

func (a plainAPI) Handle(pattern string, h http.HandlerFunc) { a.ServeMux.HandleFunc(pattern, h) }
func (plainAPI) WriteError(w http.ResponseWriter, _ *http.Request, err error) {
	http.Error(w, err.Error(), http.StatusBadGateway)
}

// plainGateway is a gateway with no protected route in front of upstream.
func plainGateway(t testing.TB, upstream string) *httptest.Server {
	t.Helper()
	u, _ := url.Parse(upstream)
	g, err := New(Options{Upstream: u, API: plainAPI{http.NewServeMux()}, Logger: slog.New(slog.DiscardHandler), UpstreamTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

// uploadsDurationVar, when set (a Go duration), makes TestAnswersWhole run
// each of its loads that long instead of a fixed number of requests: the
// minute of docs/gateway.md.
const uploadsDurationVar = "WAITROOM_UPLOADS_DURATION"

// Uploads on kept-alive connections, each answered by a large body: every
// answer arrives whole through the gateway. Without full duplex on the
// proxy path, Go's server closed the rest of a request's body once the
// answer's headers went out while the proxy still copied it upstream, and
// the proxy then dropped the upstream connection: 0.2–0.5% of answers came
// short, ending at multiples of 32 KiB (issue 35).
func TestAnswersWhole(t *testing.T) {
	// The upstream streams its answer while it reads the upload (as an
	// echo or a transcoder does), so the answer's headers reach the gateway
	// while the upload still streams through it.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex()
		size, _ := strconv.Atoi(r.Header.Get("X-Answer-Size"))
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		write := func(n int) {
			for n > 0 {
				k, err := w.Write(chunk[:min(n, len(chunk))])
				if err != nil {
					return
				}
				n -= k
				size -= k
			}
		}
		write(64 << 10)
		http.NewResponseController(w).Flush()
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		write(size)
	}))
	t.Cleanup(upstream.Close)
	gw := plainGateway(t, upstream.URL)
	upload := bytes.Repeat([]byte("u"), 1<<20)
	sizes := []int{256 << 10, 512 << 10, 1 << 20, 2 << 20, 8 << 20}
	var span time.Duration
	if v := os.Getenv(uploadsDurationVar); v != "" {
		var err error
		if span, err = time.ParseDuration(v); err != nil {
			t.Fatalf("%s=%q: %v", uploadsDurationVar, v, err)
		}
	}
	for _, load := range []struct{ clients, each int }{{5, 60}, {50, 8}} {
		t.Run(fmt.Sprintf("%d clients", load.clients), func(t *testing.T) {
			var sent, short, failed atomic.Int64
			var firstErr atomic.Pointer[error]
			deadline := time.Now().Add(span)
			var wg sync.WaitGroup
			for c := range load.clients {
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
				defer client.CloseIdleConnections()
				wg.Go(func() {
					g := rand.New(rand.NewPCG(uint64(c), 35))
					for i := 0; span == 0 && i < load.each || span > 0 && time.Now().Before(deadline); i++ {
						size := sizes[g.IntN(len(sizes))]
						req, _ := http.NewRequest("PUT", gw.URL+"/upload", &pausingReader{r: bytes.NewReader(upload)})
						req.ContentLength = int64(len(upload))
						req.Header.Set("X-Answer-Size", strconv.Itoa(size))
						sent.Add(1)
						res, err := client.Do(req)
						if err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, &err)
							continue
						}
						got, err := io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if err != nil || got != int64(size) {
							short.Add(1)
							e := fmt.Errorf("%d of %d bytes: %v", got, size, err)
							firstErr.CompareAndSwap(nil, &e)
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d uploads, %d answers short, %d failed", sent.Load(), short.Load(), failed.Load())
			if short.Load()+failed.Load() > 0 {
				t.Errorf("%d of %d answers short, %d failed; the first: %v", short.Load(), sent.Load(), failed.Load(), *firstErr.Load())
			}
			if errors.Is(t.Context().Err(), nil) && sent.Load() == 0 {
				t.Error("nothing sent")
			}
		})
	}
}

// pausingReader is an upload that stops for a moment after its first
// 64 KiB, as a client on a real network does: the answer's headers then
// reach the gateway while the rest of the upload is still to come.
type pausingReader struct {
	r      io.Reader
	n      int
	paused bool
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if p.n >= 64<<10 && !p.paused {
		p.paused = true
		time.Sleep(20 * time.Millisecond)
	}
	n, err := p.r.Read(b[:min(len(b), 16<<10)])
	p.n += n
	return n, err
}
