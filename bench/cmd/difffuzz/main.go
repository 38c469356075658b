// Command difffuzz is the gateway's differential fuzzer's long run
// (bench/run.sh --fuzz): against each real backend (Jetty 9.4, Flask,
// Express 4) it sends the regression cases and -requests generated
// requests, each once straight to the backend and once through `waitroom
// proxy` in front of it, and prints the table of docs/security.md:
// requests, the backend's own protected routings, leaks, and false
// protections by class, and the panics waitroom logged. It exits 1 when
// anything leaked or waitroom logged a panic.
//
//	bench/run.sh --fuzz                 # 1,000,000 a backend
//	bench/run.sh --fuzz --short         # 20,000 a backend
//	go run ./bench/cmd/difffuzz -requests 50000 -backends express
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
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	names := strings.Split(*backends, ",")
	env, missing := difffuzz.LookupEnv(names...)
	if len(missing) > 0 {
		fmt.Fprintln(os.Stderr, "difffuzz: missing", strings.Join(missing, "; "))
		os.Exit(2)
	}
	fmt.Printf("Seed %d; %d generated requests per backend after the %d regression cases; `go run ./bench/cmd/difffuzz -requests %d -seed %d` repeats it.\n\n",
		*seed, *requests, len(difffuzz.Regressions), *requests, *seed)
	var reports []*difffuzz.Report
	leaked := false
	for _, name := range names {
		rep, err := run(ctx, name, env, *requests, *seed, *workers)
		if err != nil {
			fmt.Fprintf(os.Stderr, "difffuzz: %s: %v\n", name, err)
			os.Exit(1)
		}
		reports = append(reports, rep)
		leaked = leaked || rep.Leaks > 0 || rep.Panics > 0
	}
	printTables(reports)
	if leaked {
		os.Exit(1)
	}
}

// run starts the backend and a gateway in front of it, and fuzzes.
func run(ctx context.Context, name string, env difffuzz.Env, requests int, seed uint64, workers int) (*difffuzz.Report, error) {
	b, err := difffuzz.StartBackend(ctx, name, env)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	gw, err := difffuzz.StartGateway(ctx, "http://"+b.Addr)
	if err != nil {
		return nil, err
	}
	defer gw.Close()
	start := time.Now()
	rep, err := difffuzz.Run(ctx, difffuzz.Options{Backend: b, Gateway: gw.Addr, Extra: difffuzz.Regressions, Requests: requests, Seed: seed,
		Workers: workers, Progress: func(sent int) {
			if sent%50_000 < 2000 || sent == requests+len(difffuzz.Regressions) {
				fmt.Fprintf(os.Stderr, "%s: %d sent, %.0f/s\n", name, sent, float64(sent)/time.Since(start).Seconds())
			}
		}})
	if err != nil {
		return nil, err
	}
	var first string
	if rep.Panics, first = gw.Panics(); rep.Panics > 0 {
		fmt.Fprintf(os.Stderr, "%s: the gateway logged %d panics, the first: %s\n", name, rep.Panics, first)
	}
	return rep, nil
}

// printTables prints the totals per backend, then per class, then the
// gateway's answers on the false protections, then any leak.
func printTables(reps []*difffuzz.Report) {
	fmt.Println("| backend | requests | the backend alone ran a protected handler | reached one through the gateway (leaks) | false protections | no answer on one side | panics in waitroom's log |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range reps {
		fmt.Printf("| %s | %d | %d | **%d** | %d | %d | **%d** |\n", r.Backend, r.Requests, r.DirectProtected, r.Leaks, r.FalseProtections, r.NoAnswer, r.Panics)
	}
	fmt.Println()
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
	}
	fmt.Println()
}
