package web_test

// A sale's phases on the waiting page, in a real browser: each phase's
// message in the visitor's language, the next phase's within one poll of
// its start. (The phases' rates are measured in httpapi's TestTwoPhaseSale.)

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

func TestBrowserPhaseMessages(t *testing.T) {
	t.Parallel() // it waits for a phase to start
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil).ReportingTo(t)
	const q = "phase-sale"
	// Held paused, so nobody is let in and every visitor reads both phases.
	// The public phase is first an hour away, so the visitors join in what
	// time the machine needs; it is then moved to begin three seconds on.
	schedule := func(public time.Time) {
		in.PutQueue(q, map[string]any{"paused": true, "message": "Welcome", "phases": []any{
			map[string]any{"name": "members", "startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), "queueingMethod": "random",
				"message": map[string]string{"en": "Members' draw: one pair each.", "ja": "会員抽選：お一人様一足。"}},
			map[string]any{"name": "public", "startsAt": public.UTC().Format(time.RFC3339),
				"message": map[string]string{"en": "Open to everyone, first come.", "ja": "どなたでも、先着順です。"}},
		}})
	}
	schedule(time.Now().Add(time.Hour).Truncate(time.Second))
	visitors := []struct {
		lang, members, public string
		v                     *apptest.Visitor
	}{
		{lang: "en", members: "Members' draw: one pair each.", public: "Open to everyone, first come."},
		{lang: "ja", members: "会員抽選：お一人様一足。", public: "どなたでも、先着順です。"},
	}
	for i := range visitors {
		p := &visitors[i]
		p.v = apptest.NewVisitor(t, browser, in, p.lang)
		p.v.Open("/q/" + q)
		p.v.WaitState("waiting", apptest.JoinWithin)
		if got := p.v.Text("#operator-message-text"); got != p.members {
			t.Errorf("%s in the members' phase: the message reads %q, want %q", p.lang, got, p.members)
		}
		var drawn bool // a draw: no place to show, a note on the draw instead
		p.v.MustEval(`document.getElementById('place').hidden && !document.getElementById('draw-note').hidden`, &drawn)
		if !drawn {
			t.Errorf("%s in the members' draw: a place is shown (%q), or no note on the draw", p.lang, p.v.Text("#position"))
		}
		// When the message changes, by the page's clock.
		p.v.MustEval(`(() => { const el = document.getElementById('operator-message-text');
			new MutationObserver(() => { window.__messageAt = performance.now(); }).observe(el, {childList: true, characterData: true, subtree: true});
			return true; })()`, new(bool))
	}
	// The admin page draws the schedule: the members' phase in force, then
	// the public one, open-ended.
	op := apptest.SignedInAdmin(t, browser, in)
	steps := `[data-queue="` + q + `"] [data-field="timeline"] .timeline-step`
	op.WaitUntil("the schedule on the queue's card", `document.querySelectorAll('`+steps+`').length === 2`, 10*time.Second)
	var drawnSteps []struct {
		Name    string
		Current bool
	}
	op.MustEval(`[...document.querySelectorAll('`+steps+`')].map(li => ({name: li.querySelector('strong').textContent, current: li.getAttribute('aria-current') === 'step'}))`, &drawnSteps)
	if len(drawnSteps) != 2 || drawnSteps[0].Name != "members" || !drawnSteps[0].Current || drawnSteps[1].Name != "public" || drawnSteps[1].Current {
		t.Errorf("the admin page's schedule: %+v, want members (in force), then public", drawnSteps)
	}
	if got := op.Text(`[data-queue="` + q + `"] [data-field="phase"]`); got != "Phase in force: members, 100/s" {
		t.Errorf("the card says %q of the phase in force", got)
	}

	public := time.Now().Add(3 * time.Second).Truncate(time.Second)
	schedule(public)
	time.Sleep(time.Until(public))
	started := map[string]float64{}
	for _, p := range visitors {
		started[p.lang] = pageNow(p.v)
	}
	for _, p := range visitors {
		p.v.WaitUntil(p.lang+": the public phase's message", `document.getElementById('operator-message-text').textContent.trim() === `+apptest.JSString(p.public), soldOutWithin)
		next := firstPollSentAfter(p.v, started[p.lang])
		var changed float64
		p.v.MustEval(`window.__messageAt ?? -1`, &changed)
		if changed < 0 || changed > next.AnsweredAt+1000 {
			t.Errorf("%s: the public message shown at %.0f ms, the first poll after the phase began answered at %.0f ms: not at that poll",
				p.lang, changed, next.AnsweredAt)
		}
		var placed bool
		p.v.MustEval(`!document.getElementById('place').hidden`, &placed)
		if !placed || p.v.Text("#position") == "" {
			t.Errorf("%s in the public phase (first come): no place shown", p.lang)
		}
	}
}
