package web_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/queue"
)

// TestBrowserChallenge: at the default difficulty, the waiting page solves
// the line's proof of work in Web Workers while it says "joining the
// line…", in English and in Korean, and goes straight on to the shopper's
// place: no other state shows, nothing to do. The time it took and the
// work it did are logged beside a native solver's pace measured in the same
// run (the figures in docs/security.md come from runs of this test with
// -v); only the behaviour is asserted, as times on a shared machine are not.
func TestBrowserChallenge(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) { c.Queue.ChallengeCost = queue.DefaultConfig().ChallengeCost })
	in.PutQueue("default", map[string]any{"paused": true}) // nobody is admitted: the page stays WAITING

	// What opening the page and joining costs Chromium without a challenge
	// (a line where anyone may enter), to tell the challenge's own CPU
	// time from the page's.
	in.PutQueue("open", map[string]any{"paused": true, "entry": "any"})
	var baseline time.Duration
	for range 2 {
		v := apptest.NewVisitor(t, browser, in, "en")
		cpu0 := browserCPU(browser)
		v.Open("/q/open")
		v.WaitState("waiting", 30*time.Second)
		cpu := browserCPU(browser) - cpu0
		if baseline == 0 || cpu < baseline {
			baseline = cpu
		}
	}
	t.Logf("baseline: opening the page and joining a line without a challenge took Chromium %.2f CPU-s", baseline.Seconds())

	for _, c := range []struct {
		name, acceptLanguage, joining string
	}{
		{"English", "en-US,en;q=0.9", "Joining the line…"},
		{"Korean", "ko-KR,ko;q=0.9", "대기열에 들어가는 중…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := apptest.NewVisitor(t, browser, in, c.acceptLanguage)
			cpu0 := browserCPU(browser)
			v.Open("/")
			v.WaitState("waiting", 90*time.Second)
			cpu := browserCPU(browser) - cpu0
			if got := v.Text(`[data-state="joining"] .joining`); got != c.joining {
				t.Errorf("the joining card said %q, want %q", got, c.joining)
			}
			var states []struct {
				State string  `json:"state"`
				At    float64 `json:"at"`
			}
			v.MustEval(`window.__states`, &states)
			if len(states) != 2 || states[0].State != "joining" || states[1].State != "waiting" {
				t.Fatalf("the page showed %+v, want joining then waiting and nothing else", states)
			}
			var ch struct {
				StartedAt, FetchedAt, SolvedAt float64
				Counter, Workers, Cost         int
			}
			v.MustEval(`window.__challenge`, &ch)
			if ch.Cost != queue.DefaultConfig().ChallengeCost || ch.Counter < 0 || ch.Workers < 1 || ch.SolvedAt <= ch.FetchedAt {
				t.Fatalf("challenge record %+v", ch)
			}
			// Entered as itself, once.
			polls := v.Polls()
			if len(polls) != 2 || polls[0].Status != 403 || polls[1].Method != "POST" || polls[1].State != "WAITING" {
				t.Fatalf("requests to the line: %+v, want 403 (challenge) then POST → WAITING", polls)
			}
			attempts := float64(ch.Counter + 1) // all workers together tried about this many
			solving := (ch.SolvedAt - ch.FetchedAt) / 1000
			t.Logf("%s: joined %.2f s after the page opened: challenge asked at %.2f s, solved in %.2f s (%.0f attempts at cost %d, %d workers, %.0f attempts/s; %d expected on average); Chromium used %.2f CPU-s, %.2f more than the baseline: %.0f µs per attempt",
				c.name, states[1].At/1000, ch.StartedAt/1000, solving, attempts, ch.Cost, ch.Workers, attempts/solving, challenge.ExpectedAttempts,
				cpu.Seconds(), (cpu - baseline).Seconds(), float64((cpu-baseline).Microseconds())/attempts)
		})
	}

	// A native solver's pace in this process, for comparison: CPU time per
	// attempt on one core (the page above used every core it was given).
	is := challenge.NewIssuer([]byte("comparison secret of 32 bytes..."), nil)
	start, cpu0 := time.Now(), processCPU()
	n := 0
	for time.Since(start) < 2*time.Second {
		p, err := challenge.Solve(context.Background(), is.Issue("default", queue.DefaultConfig().ChallengeCost), 1)
		if err != nil {
			t.Fatal(err)
		}
		n += int(p.Solution.Counter) + 1
	}
	cpu := processCPU() - cpu0
	t.Logf("native Go, one core: %.0f µs of CPU per attempt at cost %d, so %.2f CPU-s per place on average",
		float64(cpu.Microseconds())/float64(n), queue.DefaultConfig().ChallengeCost, cpu.Seconds()/float64(n)*challenge.ExpectedAttempts)
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// browserCPU is the CPU time the browser's processes have used so far
// (its own and every descendant's: renderers, workers' hosts), read from
// /proc; 0 where there is no /proc.
func browserCPU(ctx context.Context) time.Duration {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0
	}
	root := c.Browser.Process().Pid
	parent := map[int]int{}
	ticks := map[int]int64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the command name in parentheses: state ppid … utime(14) stime(15).
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		parent[pid], ticks[pid] = ppid, ut+st
	}
	var total int64
	for pid, n := range ticks {
		for p := pid; p != 0; p = parent[p] {
			if p == root {
				total += n
				break
			}
		}
	}
	return time.Duration(total) * time.Second / 100 // USER_HZ
}
