package difffuzz

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Options is one run against one backend.
type Options struct {
	Backend *Backend
	// Gateway is the address of `waitroom proxy` in front of Backend,
	// protecting GatewayRoutes, its line paused (nobody let straight in)
	// and the requests carrying no identity: nothing protected may pass.
	Gateway string
	// Reference, when set, is the address of `waitroom proxy` alone in
	// front of the same Backend (Gateway then being another front, nginx
	// asking the decision): each request is sent there too, and its answer's
	// class (2xx, 3xx, 4xx, 5xx, none) compared with Gateway's. Every front
	// answers as `waitroom proxy` does: a client's bad request is its 4xx
	// through any of them, never the front's 5xx.
	Reference string
	// Requests generated (Generate(Seed, 0…Requests-1)), after Extra.
	Requests int
	Seed     uint64
	// Extra are sent first, as they are: the regression cases.
	Extra []Request
	// Workers send at once (8 if 0); each has its own connections.
	Workers int
	// Progress, when set, is called after each batch with the requests
	// sent so far.
	Progress func(sent int)
}

// Report is what a run found.
type Report struct {
	Backend  string
	Requests int
	// DirectProtected: requests that ran a protected handler sent
	// straight to the backend (the attacks that are real there, and the
	// plain protected requests).
	DirectProtected int
	// Leaks: requests that ran a protected handler through the gateway,
	// with no entry. The number that must be 0.
	Leaks int
	// FalseProtections: requests the backend served from an unprotected
	// handler sent straight, which the gateway answered itself (refused,
	// or asked for an entry) instead of forwarding.
	FalseProtections int
	// NoAnswer: requests that got no HTTP answer on one side (a backend
	// closing on a request it cannot parse).
	NoAnswer int
	// Panics: panics the gateway logged during the run (Gateway.Panics,
	// set by the caller that started it). The other number that must be 0.
	Panics int
	// ByClass counts per operator (a request counts under each it used).
	ByClass map[string]*ClassCount
	// FalseBy counts the false protections by the gateway's answer (its
	// error code and reason, or "entry required").
	FalseBy map[string]int
	// Versus counts the answers by class through Gateway against
	// Reference's for the same request ("4xx → 5xx": `waitroom proxy`
	// answered 4xx, the front 5xx); empty without a Reference.
	Versus map[string]int
	// VersusExamples: the first few requests of each pair of classes that
	// differ.
	VersusExamples map[string][]string
	// ServerErrorsWhereProxy4xx: requests `waitroom proxy` (Reference)
	// answered with a 4xx and the front with a 5xx: a client's bad request
	// turned into the shop's server error. The third number that must be 0.
	ServerErrorsWhereProxy4xx int
	// LeakExamples, FalseExamples and ServerErrorExamples: the first few of
	// each, to read.
	LeakExamples, FalseExamples, ServerErrorExamples []string
}

// ClassCount is one row of the report.
type ClassCount struct {
	Requests, DirectProtected, Leaks, FalseProtections int
}

const (
	examples = 20
	// batch is how many requests go out between two reads of the
	// backend's hits.
	batch = 2000
)

// result is one request's two answers.
type result struct {
	req                        Request
	direct, gateway, reference Answer
}

// Run sends each request straight to the backend and through the gateway,
// and reads from the backend which ran a protected handler.
func Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Backend: o.Backend.Name, ByClass: map[string]*ClassCount{}, FalseBy: map[string]int{}, Versus: map[string]int{}, VersusExamples: map[string][]string{}}
	total := len(o.Extra) + o.Requests
	workers := o.Workers
	if workers == 0 {
		workers = 8
	}
	if err := o.Backend.Clear(ctx); err != nil {
		return nil, err
	}
	for from := 0; from < total; from += batch {
		to := min(from+batch, total)
		results := make([]result, to-from)
		var wg sync.WaitGroup
		next := make(chan int)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				direct, gateway, reference := &conn{addr: o.Backend.Addr}, &conn{addr: o.Gateway}, &conn{addr: o.Reference}
				defer direct.close()
				defer gateway.close()
				defer reference.close()
				for i := range next {
					r := o.request(i)
					res := result{req: r,
						direct:  exchange(direct, r, "d"+strconv.Itoa(i), o.Backend.Addr),
						gateway: exchange(gateway, r, "g"+strconv.Itoa(i), o.Gateway)}
					if o.Reference != "" {
						// "r": the backend's hits through it are the plain
						// proxy's run's to count, not this one's.
						res.reference = exchange(reference, r, "r"+strconv.Itoa(i), o.Reference)
					}
					results[i-from] = res
				}
			}()
		}
		for i := from; i < to && ctx.Err() == nil; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hits, err := o.Backend.Hits(ctx)
		if err != nil {
			return nil, err
		}
		if err := o.Backend.Clear(ctx); err != nil {
			return nil, err
		}
		rep.add(from, results, hits)
		if o.Reference != "" {
			rep.compare(results)
		}
		if o.Progress != nil {
			o.Progress(to)
		}
	}
	return rep, nil
}

// request is request i of the run: an extra one, or a generated one.
func (o Options) request(i int) Request {
	if i < len(o.Extra) {
		return o.Extra[i]
	}
	return Generate(o.Seed, i-len(o.Extra))
}

// exchange sends r as id on c. A request whose framing a server may read
// otherwise (a Connection or Upgrade header, a chunked body), and any
// answer of 400 or more, ends the connection: what follows on it might
// not be the next answer.
func exchange(c *conn, r Request, id, addr string) Answer {
	a := c.send(r.Bytes(id, addr), r.Method)
	if a.Status >= 400 || r.Chunked || slices.ContainsFunc(r.Header, func(h [2]string) bool {
		return strings.EqualFold(h[0], "Connection") || strings.EqualFold(h[0], "Upgrade")
	}) {
		c.close()
	}
	return a
}

// add counts one batch of results, from the backend's hits.
func (rep *Report) add(from int, results []result, hits []string) {
	ran := map[string]bool{}
	for _, h := range hits {
		if id, _, ok := strings.Cut(h, " "); ok {
			ran[id] = true
		}
	}
	for k, res := range results {
		i := strconv.Itoa(from + k)
		direct, leaked := ran["d"+i], ran["g"+i]
		falsely := !direct && servedOpen(res.direct) && answeredItself(res.gateway)
		rep.Requests++
		for _, class := range res.req.Classes {
			c := rep.ByClass[class]
			if c == nil {
				c = &ClassCount{}
				rep.ByClass[class] = c
			}
			c.Requests++
			c.DirectProtected += b2i(direct)
			c.Leaks += b2i(leaked)
			c.FalseProtections += b2i(falsely)
		}
		rep.DirectProtected += b2i(direct)
		if res.direct.Err != nil || res.gateway.Err != nil {
			rep.NoAnswer++
		}
		if leaked {
			rep.Leaks++
			if len(rep.LeakExamples) < examples {
				rep.LeakExamples = append(rep.LeakExamples, fmt.Sprintf("%s (%v): through the gateway %d %.80q", res.req, res.req.Classes, res.gateway.Status, res.gateway.Body))
			}
		}
		if falsely {
			rep.FalseProtections++
			why := gatewayAnswer(res.gateway)
			rep.FalseBy[why]++
			if len(rep.FalseExamples) < examples {
				rep.FalseExamples = append(rep.FalseExamples, fmt.Sprintf("%s (%v): straight %d %.60q, through the gateway %s", res.req, res.req.Classes, res.direct.Status, res.direct.Body, why))
			}
		}
	}
}

// compare counts one batch's answers through the front by class against
// `waitroom proxy`'s.
func (rep *Report) compare(results []result) {
	for _, res := range results {
		ref, got := answerClass(res.reference), answerClass(res.gateway)
		pair := ref + " → " + got
		rep.Versus[pair]++
		if ref != got && len(rep.VersusExamples[pair]) < 3 {
			rep.VersusExamples[pair] = append(rep.VersusExamples[pair], fmt.Sprintf("%s (%v): waitroom proxy %d %.60q, the front %d %.60q",
				res.req, res.req.Classes, res.reference.Status, res.reference.Body, res.gateway.Status, res.gateway.Body))
		}
		if ref == "4xx" && got == "5xx" {
			rep.ServerErrorsWhereProxy4xx++
			if len(rep.ServerErrorExamples) < examples {
				rep.ServerErrorExamples = append(rep.ServerErrorExamples, fmt.Sprintf("%s (%v): waitroom proxy %s, the front %d %.60q",
					res.req, res.req.Classes, gatewayAnswer(res.reference), res.gateway.Status, res.gateway.Body))
			}
		}
	}
}

// answerClass is an answer's status class ("4xx"), "none" without one.
func answerClass(a Answer) string {
	if a.Err != nil || a.Status == 0 {
		return "none"
	}
	return strconv.Itoa(a.Status/100) + "xx"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// servedOpen: the backend's catch-all answered (an unprotected handler ran).
func servedOpen(a Answer) bool {
	return a.Status >= 200 && a.Status < 300 && strings.HasPrefix(a.Body, "OPEN ")
}

// answeredItself: the gateway answered without forwarding: one of
// waitroom's error objects, or its redirect to the waiting page.
func answeredItself(a Answer) bool {
	return strings.HasPrefix(a.Body, `{"error":`) || a.Status == 303 && strings.Contains(a.Location, "/_waitroom/")
}

// gatewayAnswer names what the gateway answered: its error code and the
// reason of a refusal, or the waiting page.
func gatewayAnswer(a Answer) string {
	if a.Status == 303 {
		return "303 to the waiting page"
	}
	var e struct {
		Error struct{ Code, Reason string }
	}
	if json.Unmarshal([]byte(a.Body), &e) != nil {
		return strconv.Itoa(a.Status)
	}
	s := strconv.Itoa(a.Status) + " " + e.Error.Code
	if e.Error.Reason != "" {
		s += " (" + e.Error.Reason + ")"
	}
	return s
}
