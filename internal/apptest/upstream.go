package apptest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
)

// UpstreamShop is a small backend of its own, as a shop's checkout would be: it
// sells from its own stock at POST /buy, shows GET /checkout, echoes what
// it receives elsewhere (GET /ws: WebSocket messages), and can be told to
// fail or to stall.
type UpstreamShop struct {
	Server *httptest.Server
	mu     sync.Mutex
	stock  int
	buys   []ShopCall // every call that reached POST /buy
	seen   []ShopCall // every other request, in order
	// Fail, while set, makes POST /buy answer 500.
	Fail atomic.Bool
	// Stall, when set, holds POST /buy until it is closed.
	Stall atomic.Pointer[chan struct{}]
}

// ShopCall is what the backend saw of one request.
type ShopCall struct {
	Method, Path, RawQuery string
	Header                 http.Header
	BodySHA                string
	BodyLen                int64
}

// NewUpstreamShop starts an UpstreamShop with stock to sell; it stops
// when the test ends.
func NewUpstreamShop(t *testing.T, stock int) *UpstreamShop {
	t.Helper()
	s := &UpstreamShop{stock: stock}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /buy", func(w http.ResponseWriter, r *http.Request) {
		if ch := s.Stall.Load(); ch != nil {
			<-*ch
		}
		s.mu.Lock()
		s.buys = append(s.buys, s.record(r))
		if s.Fail.Load() {
			s.mu.Unlock()
			http.Error(w, `{"error":"the shop's database is down"}`, http.StatusInternalServerError)
			return
		}
		if s.stock == 0 {
			s.mu.Unlock()
			http.Error(w, `{"error":"sold out"}`, http.StatusConflict)
			return
		}
		s.stock--
		left := s.stock
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"bought":1,"left":%d}`, left)
	})
	mux.HandleFunc("GET /checkout", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, s.record(r))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Checkout</title><h1 id="checkout">Checkout for %s</h1>`, r.Header.Get("X-Waitroom-User"))
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		call := s.record(r) // reads the whole body as it streams, keeping only its hash
		s.mu.Lock()
		s.seen = append(s.seen, call)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Add("X-Shop-Echo", "one")
		w.Header().Add("X-Shop-Echo", "two")
		w.Header().Add("Set-Cookie", "shop_a=1; Path=/")
		w.Header().Add("Set-Cookie", "shop_b=2; Path=/")
		// ?command-as=NAME: the answer carries X-Waitroom-Command spelt
		// NAME, written as given, as a backend in any language may.
		if name := r.URL.Query().Get("command-as"); name != "" {
			w.Header()[name] = []string{"release"}
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, "%s %s?%s len=%d sha=%s\n", r.Method, r.URL.Path, r.URL.RawQuery, call.BodyLen, call.BodySHA)
		w.Write(blob) // the same bytes every time, to compare both ways
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Server.Close)
	return s
}

// blob is what the UpstreamShop's catch-all route answers after its echo line.
var blob = func() []byte {
	b := make([]byte, 256<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

func (s *UpstreamShop) record(r *http.Request) ShopCall {
	h := sha256.New()
	n, _ := io.Copy(h, r.Body)
	return ShopCall{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(),
		BodySHA: hex.EncodeToString(h.Sum(nil)), BodyLen: n}
}

// BuyCalls is every call that reached POST /buy, in order.
func (s *UpstreamShop) BuyCalls() []ShopCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ShopCall(nil), s.buys...)
}

// LastSeen is the last request to any route but POST /buy.
func (s *UpstreamShop) LastSeen() ShopCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

// Seen is every request to any route but POST /buy, in order.
func (s *UpstreamShop) Seen() []ShopCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ShopCall(nil), s.seen...)
}

// Left is the stock left.
func (s *UpstreamShop) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stock
}
