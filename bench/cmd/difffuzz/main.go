// Command difffuzz is the gateway's differential fuzzer's long run
// (bench/run.sh --fuzz): against each real backend (Jetty 9.4, Flask,
// Express 4) it sends the regression cases and -requests generated
// requests, each once straight to the backend and once through `waitroom
// proxy` in front of it, and prints the table of docs/security.md:
// requests, the backend's own protected routings, leaks, and false
// protections by class, and the panics waitroom logged. With -front nginx
// the front is real nginx on deploy/nginx-auth-request.conf asking
// waitroom's decision, and each request also goes to `waitroom proxy`
// alone: the table adds the answers nginx gave a 5xx where waitroom proxy
// gives a 4xx. It exits 1 when anything leaked, waitroom logged a panic, or
// nginx answered such a 5xx.
//
//	bench/run.sh --fuzz                 # 1,000,000 a backend
//	bench/run.sh --fuzz --short         # 20,000 a backend
//	go run ./bench/cmd/difffuzz -requests 50000 -backends express
//	go run ./bench/cmd/difffuzz -requests 100000 -front nginx
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/difffuzz"
)

func main() {
	requests := flag.Int("requests", 1_000_000, "generated requests per backend")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "the generator's seed (printed: a run can be repeated)")
	backends := flag.String("backends", strings.Join(difffuzz.BackendNames, ","), "comma-separated backends")
	workers := flag.Int("workers", 8, "requests in flight per backend")
	front := flag.String("front", "proxy", "proxy: waitroom proxy in front; nginx: nginx on deploy/nginx-auth-request.conf asking the decision")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	names := strings.Split(*backends, ",")
	env, missing := difffuzz.LookupEnv(names...)
	if len(missing) > 0 {
		fmt.Fprintln(os.Stderr, "difffuzz: missing", strings.Join(missing, "; "))
		os.Exit(2)
	}
	if *front != "proxy" && *front != "nginx" {
		fmt.Fprintf(os.Stderr, "difffuzz: -front %q: proxy or nginx\n", *front)
		os.Exit(2)
	}
	fmt.Printf("Seed %d; %d generated requests per backend after the %d regression cases, through %s; `go run ./bench/cmd/difffuzz -requests %d -seed %d -front %s` repeats it.\n\n",
		*seed, *requests, len(difffuzz.Regressions), *front, *requests, *seed, *front)
	var reports []*difffuzz.Report
	leaked := false
	for _, name := range names {
		rep, err := run(ctx, name, env, *front, difffuzz.Options{Requests: *requests, Seed: *seed, Workers: *workers, Extra: difffuzz.Regressions})
		if err != nil {
			fmt.Fprintf(os.Stderr, "difffuzz: %s: %v\n", name, err)
			os.Exit(1)
		}
		reports = append(reports, rep)
		leaked = leaked || rep.Leaks > 0 || rep.Panics > 0 || rep.ServerErrorsWhereProxy4xx > 0
	}
	printTables(reports)
	if leaked {
		os.Exit(1)
	}
}

// run starts the backend and the front in front of it, and fuzzes.
func run(ctx context.Context, name string, env difffuzz.Env, front string, o difffuzz.Options) (*difffuzz.Report, error) {
	b, err := difffuzz.StartBackend(ctx, name, env)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	f, err := startFront(ctx, b, front)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o.Backend, o.Gateway, o.Reference = b, f.addr, f.reference
	start, total := time.Now(), o.Requests+len(o.Extra)
	o.Progress = func(sent int) {
		if sent%50_000 < 2000 || sent == total {
			fmt.Fprintf(os.Stderr, "%s: %d sent, %.0f/s\n", name, sent, float64(sent)/time.Since(start).Seconds())
		}
	}
	rep, err := difffuzz.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	if front != "proxy" {
		rep.Backend += " through " + front
	}
	var first string
	if rep.Panics, first = f.panics(); rep.Panics > 0 {
		fmt.Fprintf(os.Stderr, "%s: the gateway logged %d panics, the first: %s\n", name, rep.Panics, first)
	}
	return rep, nil
}

// fuzzFront is what the requests go through: waitroom proxy, or nginx
// asking the decision with waitroom proxy alone beside it (reference).
type fuzzFront struct {
	addr, reference string
	panics          func() (int, string)
	Close           func() error
}

func startFront(ctx context.Context, b *difffuzz.Backend, front string) (*fuzzFront, error) {
	if front == "nginx" {
		conf, err := os.ReadFile("deploy/nginx-auth-request.conf")
		if err != nil {
			return nil, fmt.Errorf("%w (run from the repository's root)", err)
		}
		n, err := difffuzz.StartNginxFront(ctx, b, string(conf), 2)
		if err != nil {
			return nil, err
		}
		return &fuzzFront{addr: n.Addr, reference: n.Reference, panics: n.Panics, Close: n.Close}, nil
	}
	gw, err := difffuzz.StartGateway(ctx, "http://"+b.Addr)
	if err != nil {
		return nil, err
	}
	return &fuzzFront{addr: gw.Addr, panics: gw.Panics, Close: gw.Close}, nil
}

// printTables prints the totals per backend, then per class, then the
// gateway's answers on the false protections, then any leak.
func printTables(reps []*difffuzz.Report) {
	fmt.Println("| backend | requests | the backend alone ran a protected handler | reached one through the gateway (leaks) | false protections | no answer on one side | panics in waitroom's log | 5xx where waitroom proxy gives 4xx |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range reps {
		versus := "—" // waitroom proxy itself in front: nothing to compare
		if len(r.Versus) > 0 {
			versus = fmt.Sprintf("**%d**", r.ServerErrorsWhereProxy4xx)
		}
		fmt.Printf("| %s | %d | %d | **%d** | %d | %d | **%d** | %s |\n", r.Backend, r.Requests, r.DirectProtected, r.Leaks, r.FalseProtections, r.NoAnswer, r.Panics, versus)
	}
	fmt.Println()
	printVersus(reps)
	head := "| class |"
	line := "|---|"
	for _, r := range reps {
		head += fmt.Sprintf(" %s: requests / protected straight / leaks / false |", r.Backend)
		line += "---:|"
	}
	fmt.Println(head)
	fmt.Println(line)
	classes := map[string]bool{}
	for _, r := range reps {
		for c := range r.ByClass {
			classes[c] = true
		}
	}
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for k := range classes {
			if !yield(k) {
				return
			}
		}
	}) {
		row := "| " + c + " |"
		for _, r := range reps {
			k := r.ByClass[c]
			if k == nil {
				k = &difffuzz.ClassCount{}
			}
			row += fmt.Sprintf(" %d / %d / %d / %d |", k.Requests, k.DirectProtected, k.Leaks, k.FalseProtections)
		}
		fmt.Println(row)
	}
	fmt.Println()
	fmt.Println("False protections (the backend's catch-all answered the request sent straight; the gateway answered it itself), by the gateway's answer:")
	fmt.Println()
	for _, r := range reps {
		var whys []string
		for why, n := range r.FalseBy {
			whys = append(whys, fmt.Sprintf("%s %d", why, n))
		}
		sort.Strings(whys)
		fmt.Printf("- %s: %s\n", r.Backend, strings.Join(whys, "; "))
	}
	for _, r := range reps {
		for _, e := range r.LeakExamples {
			fmt.Printf("\nLEAK %s: %s", r.Backend, e)
		}
		for _, e := range r.ServerErrorExamples {
			fmt.Printf("\n5XX %s: %s", r.Backend, e)
		}
	}
	fmt.Println()
}

// printVersus prints, for a run through nginx, each backend's answers by
// class: waitroom proxy alone's → the front's, with the counts.
func printVersus(reps []*difffuzz.Report) {
	for _, r := range reps {
		if len(r.Versus) == 0 {
			continue
		}
		var pairs []string
		for k, n := range r.Versus {
			pairs = append(pairs, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(pairs)
		fmt.Printf("- %s, answers by class (waitroom proxy alone → the front): %s\n", r.Backend, strings.Join(pairs, "; "))
	}
	fmt.Println()
}
