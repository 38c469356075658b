package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/challenge"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue"
)

// solveCmd runs `waitroom solve`: anonymous visitors for a shop's smoke or
// load test, each made as the waiting page makes one (internal/web's
// waiting.js): an anonymous session from the page (GET /q/{queue} sets the
// session cookie), and the queue's proof of work solved natively
// (challenge.Solve, what the page's workers compute) for the enter that
// takes the place. A script would otherwise have to write its own solver
// (issue 49). It prints one line per visitor, tab-separated: the Cookie
// header, then the X-Challenge-Solution to enter with, or with --enter the
// status the line answered the enter it made itself.
func solveCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("waitroom solve", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", "http://127.0.0.1:8080", "the running instance: its URL, or its listen address as given to serve (:8080 is this machine's port 8080); "+
		"behind waitroom proxy, with its --prefix (http://127.0.0.1:8080/_waitroom; tried by itself when the root is not waitroom)")
	q := flags.String("queue", queue.DefaultQueue, "the queue")
	enter := flags.Bool("enter", false, "take each visitor's place too, as the page does (POST entries, then with the solution when challenged), and print its status instead of the solution")
	count := flags.Int("count", 1, "how many visitors, each with a session and a solution of its own")
	workers := flags.Int("workers", runtime.NumCPU(), "goroutines solving one challenge")
	flags.Usage = func() { fmt.Fprint(stderr, solveUsage); flags.PrintDefaults() }
	if v := getenv(app.EnvName("addr")); v != "" {
		flags.Set("addr", v)
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	switch {
	case flags.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %v", flags.Args())
	case *count < 1:
		return fmt.Errorf("--count: must be 1 or more, got %d", *count)
	case *workers < 1:
		return fmt.Errorf("--workers: must be 1 or more, got %d", *workers)
	}
	if err := queue.ValidateQueueName(*q); err != nil {
		return fmt.Errorf("--queue: %w", err)
	}
	base, err := instanceURL(*addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	at, err := findWaitroom(ctx, base, stderr)
	if err != nil {
		return err
	}
	v := visitors{at: at, queue: *q, workers: *workers}
	return v.run(ctx, *count, *enter, stdout, stderr)
}

// solveUsage is solve's --help before its flags.
const solveUsage = `Usage: waitroom solve [--addr URL] [--queue Q] [--enter] [--count N]

Makes anonymous visitors of a queue for a smoke or load test, as the waiting
page makes one: an anonymous session (GET /q/{queue} sets its cookie) and the
queue's proof of work, solved here natively (GET
/api/v1/queues/{queue}/challenge, as the page's workers solve it). Prints one
line per visitor, two fields separated by a tab:

  wr_session=…<TAB>SOLUTION   the Cookie header, and the X-Challenge-Solution
                              header of the one POST /api/v1/queues/{queue}/entries
                              that takes the visitor's place (within 5 minutes:
                              a solution is good for one place, once)
  wr_session=…<TAB>STATUS     with --enter: the place is taken here, and STATUS
                              is the line's answer (WAITING, READY, …); the
                              cookie then asks GET …/entries/me and orders

A refusal (429 too_many_entries: the per-address limits, 410 sold_out, …)
stops it, exit status 1, after the visitors already printed. How long a
solution took is said on standard error. docs/operations.md, "Scripted
visitors", has a load-test recipe. --addr has an environment twin, as for
serve.

`

// visitors makes a queue's anonymous visitors through an instance.
type visitors struct {
	at      waitroomBase
	queue   string
	workers int
}

// run makes count visitors, printing each one's line as soon as it is
// made, and says on stderr how long their work took.
func (v visitors) run(ctx context.Context, count int, enter bool, stdout, stderr io.Writer) error {
	var work time.Duration
	solved := 0
	for i := range count {
		cookie, second, took, err := v.one(ctx, enter)
		if err != nil {
			return fmt.Errorf("solve %s: visitor %d: %w", v.queue, i+1, err)
		}
		if took > 0 {
			work, solved = work+took, solved+1
		}
		if _, err := fmt.Fprintf(stdout, "%s\t%s\n", cookie, second); err != nil {
			return err
		}
	}
	if solved > 0 {
		fmt.Fprintf(stderr, "waitroom solve: %d of %d visitors of %s solved a challenge, in %v each on average (%d workers)\n",
			solved, count, v.queue, (work / time.Duration(solved)).Round(time.Millisecond), v.workers)
	}
	return nil
}

// one makes a visitor: its Cookie header, then its solution or, with
// enter, the status its enter was answered; and how long its work took.
func (v visitors) one(ctx context.Context, enter bool) (cookie, second string, took time.Duration, err error) {
	if cookie, err = v.session(ctx); err != nil {
		return "", "", 0, err
	}
	if enter {
		second, took, err = v.enter(ctx, cookie)
	} else {
		second, took, err = v.solve(ctx, cookie, v.at.url+v.challengePath())
	}
	return cookie, second, took, err
}

func (v visitors) challengePath() string {
	return "/api/v1/queues/" + url.PathEscape(v.queue) + "/challenge"
}

func (v visitors) entriesPath() string {
	return "/api/v1/queues/" + url.PathEscape(v.queue) + "/entries"
}

// session is a new anonymous session's Cookie header, from the queue's
// waiting page as a browser's first visit gets it.
func (v visitors) session(ctx context.Context) (string, error) {
	res, _, err := v.call(ctx, http.MethodGet, v.at.url+"/q/"+url.PathEscape(v.queue), "text/html")
	if err != nil {
		return "", err
	}
	for _, c := range res.Cookies() {
		if c.Name == identity.CookieName {
			return c.Name + "=" + c.Value, nil
		}
	}
	return "", fmt.Errorf("GET /q/%s answered without a %s cookie", v.queue, identity.CookieName)
}

// solve fetches a challenge at endpoint and solves it natively: the
// X-Challenge-Solution one enter takes a place with, and how long the work
// took.
func (v visitors) solve(ctx context.Context, cookie, endpoint string) (string, time.Duration, error) {
	_, raw, err := v.call(ctx, http.MethodGet, endpoint, "application/json", "Cookie", cookie)
	if err != nil {
		return "", 0, err
	}
	var c challenge.Challenge
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", 0, fmt.Errorf("the challenge: %v", err)
	}
	p, err := challenge.Solve(ctx, c, v.workers)
	if err != nil {
		return "", 0, err
	}
	return p.Encode(), time.Duration(p.Solution.Time * float64(time.Millisecond)), nil
}

// enter takes the visitor's place as the page does (lineRequest, then
// joinWithChallenge): POST entries; when answered 403 challenge_required,
// solve the challenge its challengeUrl names and POST again with the
// solution. It returns the status the line answered and the work it took.
func (v visitors) enter(ctx context.Context, cookie string) (string, time.Duration, error) {
	endpoint := v.at.url + v.entriesPath()
	_, raw, err := v.call(ctx, http.MethodPost, endpoint, "application/json", "Cookie", cookie)
	var took time.Duration
	var challenged challengeRequired
	if errors.As(err, &challenged) {
		var solution string
		if solution, took, err = v.solve(ctx, cookie, challenged.url(v.at)); err == nil {
			_, raw, err = v.call(ctx, http.MethodPost, endpoint, "application/json",
				"Cookie", cookie, httpapi.ChallengeSolutionHeader, solution)
		}
	}
	if err != nil {
		return "", took, err
	}
	var answer struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(raw, &answer) != nil || answer.Status == "" {
		return "", took, fmt.Errorf("POST %s: the answer names no status: %.200s", v.entriesPath(), raw)
	}
	return answer.Status, took, nil
}

// challengeRequired is enter's 403 challenge_required, with where to get
// the challenge (the error's challengeUrl: a path on the instance) and why
// (its message: a solution sent may have expired or been used).
type challengeRequired struct{ challengeURL, message string }

func (c challengeRequired) Error() string { return "403 challenge_required: " + c.message }

// url is the challenge's address: challengeUrl on the instance's origin.
func (c challengeRequired) url(at waitroomBase) string {
	base, err := url.Parse(at.url)
	ref, err2 := url.Parse(c.challengeURL)
	if err != nil || err2 != nil {
		return at.url + c.challengeURL
	}
	return base.ResolveReference(ref).String()
}

// visitorTimeout bounds one request of a visitor (not the solving).
const visitorTimeout = 30 * time.Second

// maxVisitorAnswer bounds what is read of an answer to a visitor: the API's
// are small, and of the page only its cookie is wanted.
const maxVisitorAnswer = 256 << 10

// call sends one request as the page would (accepting accept; headers:
// name, value, …) and returns the answer and its body when it is 200; an
// error otherwise, carrying the API's code and message, or for enter's 403
// challenge_required a challengeRequired.
func (v visitors) call(ctx context.Context, method, endpoint, accept string, headers ...string) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, visitorTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, endpoint, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", accept)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := adminClient.Do(req) // follows no redirect, as it says nothing secret either
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxVisitorAnswer))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: reading the answer: %v", method, req.URL.Path, err)
	}
	if res.StatusCode == http.StatusOK {
		return res, raw, nil
	}
	return nil, nil, refusalOf(method, req.URL.Path, res.StatusCode, raw)
}

// refusalOf is a visitor's request refused: challengeRequired, or an error
// naming the request, the API's code and message, and for the per-address
// limits the settings that lift them.
func refusalOf(method, path string, status int, raw []byte) error {
	var e struct {
		Error struct {
			Code         string `json:"code"`
			Message      string `json:"message"`
			ChallengeURL string `json:"challengeUrl"`
		} `json:"error"`
	}
	json.Unmarshal(raw, &e)
	if status == http.StatusForbidden && e.Error.Code == "challenge_required" && e.Error.ChallengeURL != "" && method == http.MethodPost {
		return challengeRequired{e.Error.ChallengeURL, e.Error.Message}
	}
	err := apiRefusal(status, raw)
	if err == nil {
		err = fmt.Errorf("%d %s", status, http.StatusText(status))
	}
	hint := ""
	if e.Error.Code == "too_many_entries" {
		hint = " (the instance's per-address limits: on a test instance --address-session-rate 0 and --address-entry-rate 0 lift them)"
	}
	return fmt.Errorf("%s %s: %w%s", method, path, err, hint)
}
