// Command slowheaders measures what slow clients do to everyone else: it
// runs a closed-loop load of normal clients (status polls of signed-in
// users) for -duration, then the same again while -slow connections send
// their request headers one byte a second (reconnecting whenever the
// server hangs up), and prints both runs' latencies and their ratio.
// bench/bots.sh runs it (docs/security.md, "Slow clients").
//
//	go run ./bench/cmd/slowheaders -url http://127.0.0.1:8080 -secret "$AUTH_SECRET"
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/identity"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "waitroom's base URL")
	secret := flag.String("secret", "", "waitroom's --auth-secret (the normal clients are signed-in users)")
	queue := flag.String("queue", "default", "the queue the normal clients wait in")
	clients := flag.Int("clients", 16, "normal clients, each sending its next request when the last is answered")
	slow := flag.Int("slow", 200, "connections sending their headers a byte a second")
	duration := flag.Duration("duration", 10*time.Second, "length of each run")
	flag.Parse()
	if *secret == "" {
		fmt.Fprintln(os.Stderr, "slowheaders: -secret is required")
		os.Exit(2)
	}
	u, err := url.Parse(*base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowheaders:", err)
		os.Exit(2)
	}
	id := identity.New([]byte(*secret))
	load := &normalLoad{base: *base, queue: *queue, id: id, clients: *clients,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}}
	if err := load.enterAll(); err != nil {
		fmt.Fprintln(os.Stderr, "slowheaders:", err)
		os.Exit(1)
	}
	load.run(2 * time.Second) // warm up: connections, caches
	without := load.run(*duration)

	ctx, stop := context.WithCancel(context.Background())
	var opened, closed atomic.Int64
	var wg sync.WaitGroup
	for range *slow {
		wg.Add(1)
		go func() { defer wg.Done(); slowClient(ctx, u.Host, &opened, &closed) }()
	}
	time.Sleep(6 * time.Second) // past one ReadHeaderTimeout: the slow ones come and go
	with := load.run(*duration)
	stop()
	wg.Wait()

	fmt.Printf("slowheaders: %d normal clients, %v each run\n", *clients, *duration)
	fmt.Printf("slowheaders: without slow clients: %s\n", without)
	fmt.Printf("slowheaders: with %d slow clients:  %s (slow connections opened %d, hung up on by the server %d)\n",
		*slow, with, opened.Load(), closed.Load())
	fmt.Printf("slowheaders: p99 ratio %.2f, p50 ratio %.2f, throughput ratio %.2f\n",
		with.p99.Seconds()/without.p99.Seconds(), with.p50.Seconds()/without.p50.Seconds(), with.rate/without.rate)
}

// normalLoad is signed-in users polling their status as fast as they are
// answered.
type normalLoad struct {
	base, queue string
	id          *identity.Identity
	clients     int
	client      *http.Client
}

type result struct {
	n        int
	errors   int64
	rate     float64
	p50, p99 time.Duration
	max      time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%d requests (%.0f/s), p50 %v, p99 %v, max %v, %d errors",
		r.n, r.rate, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.max.Round(time.Millisecond), r.errors)
}

func (l *normalLoad) auth(i int) string {
	return "Bearer " + l.id.SignJWT(fmt.Sprintf("slowheaders-user-%d", i), time.Hour)
}

func (l *normalLoad) enterAll() error {
	for i := range l.clients {
		req, _ := http.NewRequest("POST", l.base+"/api/v1/queues/"+l.queue+"/entries", nil)
		req.Header.Set("Authorization", l.auth(i))
		res, err := l.client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("enter: %s", res.Status)
		}
	}
	return nil
}

func (l *normalLoad) run(d time.Duration) result {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			auth := l.auth(i)
			var mine []time.Duration
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest("GET", l.base+"/api/v1/queues/"+l.queue+"/entries/me", nil)
				req.Header.Set("Authorization", auth)
				start := time.Now()
				res, err := l.client.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	r := result{n: len(lat), errors: errs.Load(), rate: float64(len(lat)) / d.Seconds()}
	if len(lat) > 0 {
		r.p50, r.p99, r.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return r
}

// slowClient opens a connection and sends a request head one byte a
// second, forever; when the server hangs up it starts again.
func slowClient(ctx context.Context, addr string, opened, closed *atomic.Int64) {
	for ctx.Err() == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		opened.Add(1)
		head := "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: "
		_, err = io.WriteString(c, head)
		for err == nil {
			select {
			case <-ctx.Done():
				c.Close()
				return
			case <-time.After(time.Second):
			}
			_, err = c.Write([]byte("a"))
		}
		c.Close()
		closed.Add(1)
	}
}
