//go:build linux

package difffuzz_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/difffuzz"
	"github.com/waitroom/waitroom/internal/proxyfront"
	"github.com/waitroom/waitroom/internal/testenv"
)

// shortRequests is how many generated requests each backend gets in the
// test command, through each front (waitroom proxy, nginx asking the
// decision): the short run, within the test command's ten minutes on two
// cores; bench/run.sh --fuzz runs the long one. WAITROOM_DIFFFUZZ_REQUESTS
// sets another count.
const shortRequests = 2500

// fuzzThroughGateway is the short differential run against b: the
// regression cases, the benign requests and shortRequests generated ones,
// each sent straight to b and through the gateway in front of it. Nothing
// may reach a protected handler through the gateway, and no benign
// request may be answered by the gateway instead of b.
func fuzzThroughGateway(t *testing.T, b *difffuzz.Backend) {
	gw, err := difffuzz.StartGateway(t.Context(), "http://"+b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	fuzzThrough(t, b, gw.Addr, "")
	noPanics(t, gw)
}

// noPanics fails the test on a panic the gateway logged during the run: an
// answer may be right and its connection dropped all the same (issue 49).
func noPanics(t *testing.T, gw interface{ Panics() (int, string) }) {
	n, first := gw.Panics()
	if n > 0 {
		t.Errorf("the gateway logged %d panics, the first: %s", n, first)
	}
	t.Logf("the gateway logged %d panics", n)
}

// fuzzThroughNginx is the same run through real nginx on
// deploy/nginx-auth-request.conf, asking the gateway's decision and
// forwarding to b itself: the judgment must not depend on who asks, and no
// answer may be nginx's 5xx where `waitroom proxy` alone answers 4xx.
func fuzzThroughNginx(t *testing.T, b *difffuzz.Backend) {
	if proxyfront.Binary("nginx") == "" {
		testenv.Missing(t, "nginx")
	}
	conf, err := os.ReadFile("../../deploy/nginx-auth-request.conf")
	if err != nil {
		t.Fatal(err)
	}
	front, err := difffuzz.StartNginxFront(t.Context(), b, string(conf), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close() })
	fuzzThrough(t, b, front.Addr, front.Reference)
	noPanics(t, front)
}

// fuzzThrough runs the short differential run through the front at addr;
// with reference (`waitroom proxy` alone in front of b), its answers by
// class against the reference's too.
func fuzzThrough(t *testing.T, b *difffuzz.Backend, addr, reference string) {
	n := shortRequests
	if v := os.Getenv("WAITROOM_DIFFFUZZ_REQUESTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("WAITROOM_DIFFFUZZ_REQUESTS=%q: %v", v, err)
		}
	}
	t.Run("benign requests pass", func(t *testing.T) {
		rep, err := difffuzz.Run(t.Context(), difffuzz.Options{Backend: b, Gateway: addr, Reference: reference, Extra: difffuzz.Benign})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Leaks != 0 || rep.FalseProtections != 0 || rep.DirectProtected != 0 {
			t.Errorf("%d leaks, %d false protections, %d protected straight (want none):\n%s\n%s",
				rep.Leaks, rep.FalseProtections, rep.DirectProtected, strings.Join(rep.LeakExamples, "\n"), strings.Join(rep.FalseExamples, "\n"))
		}
	})
	t.Run(fmt.Sprintf("%d regressions and %d generated", len(difffuzz.Regressions), n), func(t *testing.T) {
		rep, err := difffuzz.Run(t.Context(), difffuzz.Options{Backend: b, Gateway: addr, Reference: reference, Extra: difffuzz.Regressions, Requests: n, Seed: 35})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(summary(rep))
		for pair, ex := range rep.VersusExamples {
			t.Logf("%s, e.g.:\n%s", pair, strings.Join(ex, "\n"))
		}
		if rep.Leaks != 0 {
			t.Errorf("%d requests reached a protected handler through the gateway without an entry:\n%s", rep.Leaks, strings.Join(rep.LeakExamples, "\n"))
		}
		// The run proves something only if the attacks are real here.
		if rep.DirectProtected < n/10 {
			t.Errorf("only %d of %d requests ran a protected handler sent straight to %s: the run proves little", rep.DirectProtected, rep.Requests, b.Name)
		}
		if rep.ServerErrorsWhereProxy4xx != 0 {
			t.Errorf("%d requests waitroom proxy answers with a 4xx got a 5xx through the front:\n%s", rep.ServerErrorsWhereProxy4xx, strings.Join(rep.ServerErrorExamples, "\n"))
		}
		if rep.NoAnswer > rep.Requests/20 {
			t.Errorf("%d of %d requests got no answer on one side", rep.NoAnswer, rep.Requests)
		}
	})
}

// summary is the report as a few lines: the totals, the classes with their
// counts, the gateway's answers on the false protections.
func summary(r *difffuzz.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d requests, %d ran a protected handler straight, %d through the gateway (leaks), %d false protections, %d without an answer on one side\n",
		r.Backend, r.Requests, r.DirectProtected, r.Leaks, r.FalseProtections, r.NoAnswer)
	classes := slices.Sorted(func(yield func(string) bool) {
		for k := range r.ByClass {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range classes {
		c := r.ByClass[k]
		fmt.Fprintf(&b, "  %-20s %6d requests %6d protected straight %3d leaks %6d false\n", k, c.Requests, c.DirectProtected, c.Leaks, c.FalseProtections)
	}
	var whys []string
	for why, n := range r.FalseBy {
		whys = append(whys, fmt.Sprintf("%s: %d", why, n))
	}
	sort.Strings(whys)
	fmt.Fprintf(&b, "  false protections by the gateway's answer: %s", strings.Join(whys, "; "))
	if len(r.Versus) > 0 {
		fmt.Fprintf(&b, "\n  waitroom proxy's class → the front's: %s; 5xx where waitroom proxy gives 4xx: %d", versus(r), r.ServerErrorsWhereProxy4xx)
	}
	return b.String()
}

// versus is the report's answer classes, through waitroom proxy against
// through the front, as "4xx → 4xx 2517; …".
func versus(r *difffuzz.Report) string {
	var pairs []string
	for k, n := range r.Versus {
		pairs = append(pairs, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "; ")
}
