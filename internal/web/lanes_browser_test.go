package web_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

// Lanes and access codes on the pages (issue 53), in Chromium against one
// real instance: the code field, a place named by its lane, a used and a
// wrong code said in the page's words, in English and Korean; the page
// without JavaScript taking a code by its form; the admin page's figures
// of each lane and its lanes setting.
func TestBrowserLanes(t *testing.T) {
	browser := apptest.StartBrowser(t)
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, nil)

	// lanes: a members' lane reached by codes, and the public.
	lanes := []map[string]any{{"name": "members", "codes": true, "share": 0.3}, {"name": "public", "share": 0.7}}
	// addCodes stores codes for queue's members lane, one use each.
	addCodes := func(t *testing.T, queue string, codes ...string) {
		t.Helper()
		r := in.Do("POST", "/admin/v1/queues/"+queue+"/codes", in.AdminAuth(),
			map[string]any{"lane": "members", "uses": 1, "codes": codes})
		if r.Status != 200 || r.Num("added") != float64(len(codes)) {
			t.Fatalf("adding %d codes: %d %s", len(codes), r.Status, r.Raw)
		}
	}
	// enter takes a place for user, with a code when one is given.
	enter := func(t *testing.T, queue, user, code string) apptest.Response {
		t.Helper()
		var body any
		if code != "" {
			body = map[string]any{"accessCode": code}
		}
		r := in.Do("POST", "/api/v1/queues/"+queue+"/entries", in.As(user), body)
		if r.Status != 200 {
			t.Fatalf("%s entering %s: %d %s", user, queue, r.Status, r.Raw)
		}
		return r
	}

	t.Run("a code moves the place to its lane; wrong and used codes said, in two languages", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		q := apptest.UniqueID("l-codes")
		in.PutQueue(q, map[string]any{"paused": true, "lanes": lanes})
		mine, hers, taken := accesscode.New(), accesscode.New(), accesscode.New()
		addCodes(t, q, mine, hers, taken)
		enter(t, q, "l-pub1", "")
		enter(t, q, "l-pub2", "")
		if r := enter(t, q, "l-member", taken); r.Str("lane") != "members" || r.Num("position") != 1 {
			t.Fatalf("the API's member: lane %q position %v, want members 1: %s", r.Str("lane"), r.Num("position"), r.Raw)
		}

		type visit struct {
			lang, accept     string
			before           int    // the public place before the code
			used             string // a used code, and what the page says of it
			usedSays         string
			code             string
			place, placeSays string // the place in the members lane, and its label
			lengthSays       string
		}
		for _, v := range []visit{
			{"en", "en-US,en;q=0.9", 3, taken, "That code has already been used.", mine, "2", "Your place in the members line", "People in the members line"},
			{"ko", "ko-KR,ko;q=0.9", 3, mine, "이미 사용된 코드입니다.", hers, "3", "members 줄에서 내 순서", "members 줄 대기 인원"},
		} {
			p := apptest.NewVisitor(t, browser, in, v.accept)
			p.Open("/q/" + q)
			p.WaitState("waiting", apptest.JoinWithin)
			p.WaitUntil("the code field", `!document.getElementById('code-form').hidden`, 5*time.Second)
			if got := p.Text("#position"); got != "3" {
				t.Fatalf("%s: the public place = %q, want 3; %s", v.lang, got, p.Screen())
			}
			// A code nobody issued, then one used already: said, and the
			// place is kept.
			if v.lang == "en" {
				p.TypeInto("#access-code", accesscode.New())
				p.Click("#code-button")
				p.WaitUntil("the wrong code said", `document.getElementById('code-message').textContent.includes("isn't valid")`, 10*time.Second)
			}
			p.TypeInto("#access-code", strings.ToLower(v.used))
			p.Click("#code-button")
			p.WaitUntil("the used code said", `document.getElementById('code-message').textContent === `+apptest.JSString(v.usedSays), 10*time.Second)
			if got, state := p.Text("#position"), p.State(); got != "3" || state != "waiting" {
				t.Errorf("%s: after a used code the page shows %s at %q, want waiting at 3", v.lang, state, got)
			}
			// The line goes on being asked, as it was due.
			var sent int
			p.MustEval(`window.__polls.length`, &sent)
			p.WaitUntil("a poll after the refusal", `window.__polls.slice(`+strconv.Itoa(sent)+`).some(r => r.method === 'GET' && r.status === 200)`, 15*time.Second)
			// The field and what it says pass the audit the other states do
			// (TestAccessibility: WCAG 2.1 A and AA).
			if bad, err := p.Axe(testenv.Axe(t)); err != nil || len(bad) > 0 {
				t.Errorf("%s: the code field's violations: %v (%v)", v.lang, bad, err)
			}
			// The code: the place is now in the members lane, named so.
			p.TypeInto("#access-code", v.code)
			p.Click("#code-button")
			p.WaitUntil("the place in the members lane", `document.getElementById('place-label').textContent === `+apptest.JSString(v.placeSays), 10*time.Second)
			if got := p.Text("#position"); got != v.place {
				t.Errorf("%s: the place in the members lane = %q, want %s", v.lang, got, v.place)
			}
			if got := p.Text("#length-label"); got != v.lengthSays {
				t.Errorf("%s: the length's label = %q, want %q", v.lang, got, v.lengthSays)
			}
			var hidden bool
			p.MustEval(`document.getElementById('code-form').hidden`, &hidden)
			if !hidden {
				t.Errorf("%s: the code field is still shown in the members lane", v.lang)
			}
			// A lane's place asks its instance: no ticket to read the
			// public lane's front document by.
			var ticket any
			p.MustEval(`window.__ticket()`, &ticket)
			if ticket != nil {
				t.Errorf("%s: the page keeps a ticket %v for a place in the members lane", v.lang, ticket)
			}
			// Every request carrying the code went in a body: no URL the
			// page asked for holds a code.
			var urls []string
			p.MustEval(`performance.getEntriesByType('resource').map(e => e.name)`, &urls)
			for _, u := range urls {
				for _, c := range []string{mine, hers, taken} {
					if strings.Contains(strings.ToUpper(strings.ReplaceAll(u, "-", "")), strings.ReplaceAll(c, "-", "")) {
						t.Errorf("%s: a code in the URL %s", v.lang, u)
					}
				}
			}
		}
		// The people in the public lane never went back: one of the two
		// ahead is still first, the other second.
		if st := in.QueueStats(q); st.Num("length") != 5 {
			t.Errorf("the queue's length = %v, want 5 (2 public, 3 members): %s", st.Num("length"), st.Raw)
		}
	})

	t.Run("the page without JavaScript takes a code by its form", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		q := apptest.UniqueID("l-noscript")
		in.PutQueue(q, map[string]any{"paused": true, "entry": "any", "lanes": lanes})
		code, used := accesscode.New(), accesscode.New()
		addCodes(t, q, code, used)
		enter(t, q, "l-ns-first", "")
		enter(t, q, "l-ns-used", used)

		for _, lang := range []string{"en", "ko"} {
			p := apptest.NewVisitor(t, browser, in, lang)
			p.Open("/q/" + q + "/noscript")
			p.WaitUntil("the waiting card", `document.querySelector('[data-state="waiting"]') !== null`, apptest.JoinWithin)
			if got := p.Text("#position"); got != "2" {
				t.Fatalf("%s: the public place without JavaScript = %q, want 2", lang, got)
			}
			if lang == "ko" {
				p.TypeInto("#access-code", used)
				p.Click("#code-button")
				p.WaitUntil("the used code said", `document.getElementById('code-message')?.textContent === '이미 사용된 코드입니다.'`, 10*time.Second)
				// The message stays up to be read: the page's refresh waits
				// 30 s, not the line's 2.
				var refresh string
				p.MustEval(`document.querySelector('meta[http-equiv="refresh"]')?.content ?? ''`, &refresh)
				if !strings.HasPrefix(refresh, "30;") {
					t.Errorf("after a used code the page refreshes as %q, want after 30 s", refresh)
				}
				if got := p.Text("#position"); got != "2" {
					t.Errorf("after a used code the place = %q, want still 2", got)
				}
				continue
			}
			p.TypeInto("#access-code", code)
			p.Click("#code-button")
			p.WaitUntil("the place in the members lane", `document.getElementById('place-label')?.textContent === 'Your place in the members line'`, 10*time.Second)
			if got := p.Text("#position"); got != "2" {
				t.Errorf("the place in the members lane without JavaScript = %q, want 2", got)
			}
			var found bool
			p.MustEval(`document.getElementById('code-form') !== null`, &found)
			if found {
				t.Error("the code form is still there in the members lane")
			}
			var href string
			p.MustEval(`location.href`, &href)
			if strings.Contains(href, "accessCode") || strings.Contains(strings.ToUpper(href), strings.ToUpper(code[:4])+"-") {
				t.Errorf("the code is in the page's URL %s", href)
			}
		}
	})

	t.Run("the admin page: each lane's figures, and the lanes setting", func(t *testing.T) {
		t.Parallel()
		in := in.ReportingTo(t)
		q := apptest.UniqueID("l-admin")
		in.PutQueue(q, map[string]any{"paused": true, "lanes": lanes})
		codes := []string{accesscode.New(), accesscode.New(), accesscode.New()}
		addCodes(t, q, codes...)
		enter(t, q, "l-a1", "")
		enter(t, q, "l-a2", codes[0])
		enter(t, q, "l-a3", "")

		op := apptest.SignedInAdmin(t, browser, in)
		card := `[data-queue="` + q + `"]`
		op.WaitUntil("the card's lanes", `document.querySelectorAll('`+card+` .lane-rows tr').length === 2`, 10*time.Second)
		var rows [][]string
		op.MustEval(`[...document.querySelectorAll('`+card+` .lane-rows tr')].map(tr => [...tr.children].map(c => c.textContent))`, &rows)
		want := [][]string{
			{"members", "30%", "1", "0 (0%)", "1", "2"},
			{"public", "70%", "2", "0 (0%)", "–", "–"},
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("the lanes' figures (-want +got):\n%s", diff)
		}

		// The lanes setting is edited as JSON, as phases are.
		op.Click(card + ` .settings summary`)
		field := card + ` .settings-form textarea[name="lanes"]`
		op.WaitUntil("the lanes field", `document.querySelector('`+field+`')?.value.includes('"members"')`, 5*time.Second)
		op.TypeInto(field, `[{"name": "members", "codes": true, "share": 0.5}, {"name": "public", "share": 0.5}]`)
		op.Click(card + ` .settings-form button[type="submit"]`)
		op.WaitUntil("the new shares on the card", `[...document.querySelectorAll('`+card+` .lane-rows tr td:nth-child(2)')].every(td => td.textContent === '50%')`, 10*time.Second)
		if st := in.QueueStats(q); !strings.Contains(st.Raw, `"share":0.5`) {
			t.Errorf("the lanes after the save: %s", st.Raw)
		}
	})
}
