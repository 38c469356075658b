package web_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// browserHandoff (issue 55, in TestBrowser's browser and instance): a
// place carried from a laptop's browser context to a phone's keeps its
// ticket and place, the laptop shows MOVED and stops asking, the link
// works once only (a second claim is the 410 page); and a READY entry
// carried back keeps its token.
func browserHandoff(t *testing.T, browser context.Context, in *apptest.Instance) {
	q := apptest.UniqueID("b-handoff")
	in.PutQueue(q, map[string]any{"paused": true, "entry": "any"})
	if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("h-first"), nil); r.Status != 200 {
		t.Fatalf("the first in line: %d %s", r.Status, r.Raw)
	}
	laptop := apptest.NewVisitor(t, browser, in, "en-US,en;q=0.9")
	laptop.Open("/q/" + q)
	laptop.WaitState("waiting", apptest.JoinWithin)
	laptop.WaitUntil("the handoff button", `!document.getElementById('handoff').hidden`, 5*time.Second)
	var before struct {
		Ticket string `json:"ticket"`
	}
	laptop.MustEval(`fetch(location.origin + '/api/v1/queues/`+q+`/entries/me').then((r) => r.json())`, &before)
	if got := laptop.Text("#position"); got != "2" || before.Ticket == "" {
		t.Fatalf("the laptop's place = %q (ticket %q), want 2; %s", got, before.Ticket, laptop.Screen())
	}
	link := makeLink(t, laptop)

	phone := apptest.NewVisitor(t, browser, in, "ko-KR,ko;q=0.9")
	phone.Open(link)
	phone.WaitState("handoff-offer", 10*time.Second)
	if got := phone.Text("#handoff-continue"); got != "여기서 계속하기" {
		t.Errorf("the Continue here button in Korean = %q", got)
	}
	if got := laptop.State(); got != "waiting" {
		t.Fatalf("the laptop after the link was only opened: %s, want waiting (a GET claims nothing)", got)
	}
	phone.Click("#handoff-continue")
	phone.WaitState("waiting", apptest.JoinWithin)
	var after struct {
		Ticket   string  `json:"ticket"`
		Position float64 `json:"position"`
	}
	phone.MustEval(`fetch(location.origin + '/api/v1/queues/`+q+`/entries/me').then((r) => r.json())`, &after)
	if got := phone.Text("#position"); got != "2" || after.Position != 2 || ticketNumber(after.Ticket) != ticketNumber(before.Ticket) {
		t.Fatalf("the phone's place = %q, ticket %q, want the laptop's 2, ticket %q; %s", got, after.Ticket, before.Ticket, phone.Screen())
	}
	laptop.WaitState("moved", 30*time.Second)
	if got := laptop.Text("#moved-heading"); got != "Your place moved to another device" {
		t.Errorf("the laptop says %q", got)
	}
	var last apptest.PagePoll
	laptop.MustEval(`window.__polls[window.__polls.length - 1]`, &last)
	if last.State != "MOVED" || last.PollAfterSeconds != nil {
		t.Errorf("the laptop's last request: %+v, want MOVED with nothing to wait for", last)
	}

	again := apptest.NewVisitor(t, browser, in, "en")
	again.Open(link)
	again.WaitState("handoff-offer", 10*time.Second)
	again.Click("#handoff-continue")
	again.WaitState("handoff-gone", 10*time.Second)

	// READY, carried back to the laptop: the same token.
	in.PatchQueue(q, map[string]any{"paused": false, "ratePerSecond": 100})
	phone.WaitState("ready", 30*time.Second)
	var token struct {
		Status string `json:"status"`
		Token  string `json:"token"`
	}
	phone.MustEval(`fetch(location.origin + '/api/v1/queues/`+q+`/entries/me').then((r) => r.json())`, &token)
	back := makeLink(t, phone)
	laptop.Open(back)
	laptop.WaitState("handoff-offer", 10*time.Second)
	laptop.Click("#handoff-continue")
	laptop.WaitState("ready", 30*time.Second)
	var got struct {
		Token string `json:"token"`
	}
	laptop.MustEval(`fetch(location.origin + '/api/v1/queues/`+q+`/entries/me').then((r) => r.json())`, &got)
	if token.Status != "READY" || got.Token != token.Token {
		t.Fatalf("the READY entry carried back: token %q, want the phone's %q", got.Token, token.Token)
	}
	phone.WaitState("moved", 30*time.Second)
}

// makeLink clicks "Use another device" and answers the link's path, once
// its QR code has loaded.
func makeLink(t *testing.T, v *apptest.Visitor) string {
	t.Helper()
	v.Click("#handoff-button")
	v.WaitUntil("the link and its QR code", `document.getElementById('handoff-url').value !== '' &&
		document.getElementById('handoff-qr').complete && document.getElementById('handoff-qr').naturalWidth > 0`, 10*time.Second)
	var link string
	v.MustEval(`document.getElementById('handoff-url').value`, &link)
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// ticketNumber is a signed ticket's place-holder (t1.<epoch>.<ticket>.<mac>):
// the MAC names the user, the number the place.
func ticketNumber(signed string) string {
	var n [4]string
	i := 0
	for j := range len(signed) {
		if signed[j] == '.' && i < 3 {
			i++
			continue
		}
		n[i] += string(signed[j])
	}
	return n[1] + "." + n[2]
}
