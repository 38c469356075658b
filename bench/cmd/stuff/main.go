// Command stuff is the line-stuffing script of issue 11, written as an
// attacker would: from one address, -threads goroutines each take a fresh
// anonymous session (GET /) before every enter, and solve the queue's
// proof-of-work challenge natively when asked (one core per thread), for
// -duration; a place under way when the time is up is finished, so that
// the CPU time per place counts no abandoned work. It reports the places it
// gained, what it was refused, and its own CPU time per place (the server
// runs in another process, so none of its time is counted). bench/bots.sh runs it against the default settings
// and with the per-address limits lifted (docs/security.md).
//
//	go run ./bench/cmd/stuff -url http://127.0.0.1:8080 -threads 8 -duration 10s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/challenge"
)

type counts struct {
	places, solved          atomic.Int64
	sessionsRefused         atomic.Int64 // 429 on GET /
	entriesRefused          atomic.Int64 // 429 too_many_entries on enter
	challengesRefused       atomic.Int64 // 403 after solving (should not happen)
	otherAnswers, netErrors atomic.Int64
}

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "waitroom's base URL")
	queue := flag.String("queue", "default", "the queue to stuff")
	threads := flag.Int("threads", 8, "concurrent stuffers")
	duration := flag.Duration("duration", 10*time.Second, "how long to stuff")
	honour := flag.Bool("retry-after", true, "sleep for Retry-After when refused 429 (a spinning script gains nothing more, but burns CPU that would blur the figure per place)")
	flag.Parse()

	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *threads * 2},
		// The page's cookie is read from the answer, not kept in a jar:
		// every enter gets a session of its own.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	// stop ends the run: no new place is begun after it; the places under
	// way finish within work.
	stop, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	work, cancelWork := context.WithTimeout(context.Background(), *duration+5*time.Minute)
	defer cancelWork()
	var c counts
	cpu0, start := cpuTime(), time.Now()
	var wg sync.WaitGroup
	for range *threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stuffer{ctx: work, stop: stop, client: client, base: *base, queue: *queue, c: &c, honour: *honour}
			for stop.Err() == nil {
				s.takeOnePlace()
			}
		}()
	}
	wg.Wait()
	took, cpu := time.Since(start), cpuTime()-cpu0
	places := c.places.Load()
	fmt.Printf("stuff: %d threads for %v (the last places finished %v later) from one address: %d places (%.1f/s); %d challenges solved\n",
		*threads, *duration, (took - *duration).Round(time.Millisecond), places, float64(places)/took.Seconds(), c.solved.Load())
	fmt.Printf("stuff: refused: %d new sessions (429), %d entries (429 too_many_entries), %d solutions (403); %d other answers, %d network errors\n",
		c.sessionsRefused.Load(), c.entriesRefused.Load(), c.challengesRefused.Load(), c.otherAnswers.Load(), c.netErrors.Load())
	if places > 0 {
		fmt.Printf("stuff: CPU %.2f s: %.3f CPU-s per place, %.2f places per CPU-second\n",
			cpu.Seconds(), cpu.Seconds()/float64(places), float64(places)/cpu.Seconds())
	} else {
		fmt.Printf("stuff: CPU %.2f s, no place\n", cpu.Seconds())
	}
}

type stuffer struct {
	ctx    context.Context // the place under way
	stop   context.Context // the run
	client *http.Client
	base   string
	queue  string
	c      *counts
	honour bool
}

// takeOnePlace: a fresh session, then enter, solving the challenge if asked.
func (s *stuffer) takeOnePlace() {
	res, body, err := s.do("GET", "/", "", "")
	if err != nil {
		return
	}
	if res.StatusCode == http.StatusTooManyRequests {
		s.c.sessionsRefused.Add(1)
		s.wait(res)
		return
	}
	var cookie string
	for _, ck := range res.Cookies() {
		if ck.Name == "wr_session" {
			cookie = ck.Name + "=" + ck.Value
		}
	}
	if res.StatusCode != http.StatusOK || cookie == "" {
		s.c.otherAnswers.Add(1)
		return
	}
	entries := "/api/v1/queues/" + s.queue + "/entries"
	res, body, err = s.do("POST", entries, cookie, "")
	if err != nil {
		return
	}
	if res.StatusCode == http.StatusForbidden {
		url := jsonField(body, "challengeUrl")
		if url == "" {
			s.c.otherAnswers.Add(1)
			return
		}
		res, body, err = s.do("GET", url, "", "")
		if err != nil || res.StatusCode != http.StatusOK {
			s.c.otherAnswers.Add(1)
			return
		}
		var ch challenge.Challenge
		if err := json.Unmarshal(body, &ch); err != nil {
			s.c.otherAnswers.Add(1)
			return
		}
		p, err := challenge.Solve(s.ctx, ch, 1)
		if err != nil {
			return // out of time
		}
		s.c.solved.Add(1)
		res, body, err = s.do("POST", entries, cookie, p.Encode())
		if err != nil {
			return
		}
		if res.StatusCode == http.StatusForbidden {
			s.c.challengesRefused.Add(1)
			return
		}
	}
	switch res.StatusCode {
	case http.StatusOK:
		s.c.places.Add(1)
	case http.StatusTooManyRequests:
		s.c.entriesRefused.Add(1)
		s.wait(res)
	default:
		s.c.otherAnswers.Add(1)
	}
}

func (s *stuffer) do(method, path, cookie, solution string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(s.ctx, method, s.base+path, nil)
	if err != nil {
		return nil, nil, err
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	if solution != "" {
		req.Header.Set("X-Challenge-Solution", solution)
	}
	res, err := s.client.Do(req)
	if err != nil {
		if s.ctx.Err() == nil {
			s.c.netErrors.Add(1)
		}
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res, body, err
}

func (s *stuffer) wait(res *http.Response) {
	if !s.honour {
		return
	}
	secs, _ := strconv.Atoi(res.Header.Get("Retry-After"))
	t := time.NewTimer(time.Duration(max(secs, 1)) * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop.Done():
	}
}

// jsonField reads error.<name> from an error answer.
func jsonField(body []byte, name string) string {
	var e struct {
		Error map[string]any `json:"error"`
	}
	json.Unmarshal(body, &e)
	v, _ := e.Error[name].(string)
	return v
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "stuff: getrusage:", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
