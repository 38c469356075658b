package web

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template/parse"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/estimate"
)

// The waiting page's templates: the built-in one, the operator's
// DIR/waiting.html, and DIR/queues/{queue}/waiting.html for one queue. Each
// is checked the same way before anything is served:
//
//  1. it parses (html/template: every value it prints is escaped);
//  2. it defines no template of waitroom's (waitroom.*);
//  3. it places the blocks the page cannot work without: waitroom.head and
//     waitroom.status (docs/page.md);
//  4. it runs, in every language, for the page with JavaScript and for
//     each state of the page without, and writes <html lang dir> as the
//     language asks.
//
// A failure names the file and the line.

// requiredBlocks are the blocks a waiting page must place, with the tag
// they belong before, for the error's line.
var requiredBlocks = []struct{ name, before, where string }{
	{"waitroom.head", "</head>", "inside <head>"},
	{"waitroom.status", "</body>", "inside <body>"},
}

// pageSet is the waiting page's templates by queue and by phase.
type pageSet struct {
	site     *template.Template            // the operator's waiting.html, else the built-in
	perQueue map[string]*template.Template // DIR/queues/{queue}/waiting.html
	named    map[string]*template.Template // DIR/templates/{name}/waiting.html, for a phase's template
}

// forVisit is the template of the visit's phase, else its queue's own,
// else the site's.
func (p *pageSet) forVisit(v Visit) *template.Template {
	if t, ok := p.named[v.Template]; ok {
		return t
	}
	if t, ok := p.perQueue[v.Queue]; ok {
		return t
	}
	return p.site
}

// Names lists the templates in use: "built-in" or the operator's file, then
// one per queue that has its own.
func (s *Site) Templates() []string {
	out := []string{s.pages.site.Name()}
	for _, set := range []map[string]*template.Template{s.pages.perQueue, s.pages.named} {
		for _, k := range slices.Sorted(maps.Keys(set)) {
			out = append(out, set[k].Name())
		}
	}
	return out
}

// loadPages reads and checks the built-in template and dir's.
func (s *Site) loadPages(dir string) (*pageSet, error) {
	builtin, err := files.ReadFile("templates/waiting.html")
	if err != nil {
		return nil, err
	}
	p := &pageSet{perQueue: map[string]*template.Template{}, named: map[string]*template.Template{}}
	// The built-in page is checked like any other, but for the trial runs
	// (4.), which its tests make (TestBuiltinTemplate): every start of the
	// program, in every test, would pay for them.
	if p.site, err = s.parsePage(builtinName, string(builtin)); err != nil {
		return nil, err
	}
	if dir == "" {
		return p, nil
	}
	var errs []error
	found := false
	site := filepath.Join(dir, "waiting.html")
	if t, err := s.pageFile(site); err == nil {
		p.site, found = t, true
	} else if !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	// A queue's own folder, and a phase's template's, each hold a
	// waiting.html; the folder's name is the queue's, or the template's.
	for _, set := range []struct {
		folder, names string
		into          map[string]*template.Template
		valid         func(string) error
	}{
		{"queues", "a queue", p.perQueue, queue.ValidateQueueName},
		{"templates", "a phase's template", p.named, validTemplateName},
	} {
		entries, err := os.ReadDir(filepath.Join(dir, set.folder))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, e := range entries {
			path := filepath.Join(dir, set.folder, e.Name(), "waiting.html")
			if !e.IsDir() {
				continue
			}
			if err := set.valid(e.Name()); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not %s name: %w", filepath.Join(dir, set.folder, e.Name()), e.Name(), set.names, err))
				continue
			}
			t, err := s.pageFile(path)
			if errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("%s: missing: the folder holds its waiting.html", path))
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			set.into[e.Name()], found = t, true
		}
	}
	if !found && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: neither waiting.html nor queues/{queue}/waiting.html: nothing to serve", dir))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// validTemplateName holds a templates/ folder to the names a phase's
// template may have.
func validTemplateName(name string) error {
	if !templateName.MatchString(name) {
		return errors.New("1 to 40 of a-z, 0-9, - and _, starting with a letter or digit")
	}
	return nil
}

var templateName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// pageFile reads and checks one operator's template.
func (s *Site) pageFile(path string) (*template.Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return s.pageTemplate(path, string(b))
}

// builtinName names the built-in page in errors.
const builtinName = "built-in waiting.html"

// pageTemplate parses text (named name in errors: its file), checks it,
// adds waitroom's blocks and runs it (tryPage).
func (s *Site) pageTemplate(name, text string) (*template.Template, error) {
	t, err := s.parsePage(name, text)
	if err != nil {
		return nil, err
	}
	if err := s.tryPage(t, name, text); err != nil {
		return nil, err
	}
	return t, nil
}

// parsePage is pageTemplate but for the trial runs.
func (s *Site) parsePage(name, text string) (*template.Template, error) {
	t, err := template.New(name).Funcs(s.funcs()).Parse(text)
	if err != nil {
		return nil, tidy(err)
	}
	for _, d := range t.Templates() {
		if strings.HasPrefix(d.Name(), "waitroom.") && d.Tree != nil {
			return nil, fmt.Errorf("%s: defines %q: the waitroom.* templates are waitroom's; place them with {{template %q .}}",
				position(d.Tree, d.Tree.Root), d.Name(), d.Name())
		}
	}
	placed := map[string]bool{}
	placedBlocks(t, t.Tree, placed, map[string]bool{})
	for _, b := range requiredBlocks {
		if !placed[b.name] {
			return nil, fmt.Errorf("%s:%d: the page never places {{template %q .}}; put it %s (before this line's %s)",
				name, lineOf(text, b.before), b.name, b.where, b.before)
		}
	}
	blocks, err := files.ReadFile("templates/blocks.html")
	if err != nil {
		return nil, err
	}
	if _, err := t.New("blocks.html").Parse(string(blocks)); err != nil {
		return nil, err
	}
	return t, nil
}

// CheckBuiltin runs the built-in page's trial runs (tryPage), which New
// leaves out, in shop and gateway mode.
func CheckBuiltin() error {
	builtin, err := files.ReadFile("templates/waiting.html")
	if err != nil {
		return err
	}
	for _, o := range []Options{{}, {Base: "/_waitroom", Gateway: true}} {
		s, err := New(o)
		if err != nil {
			return err
		}
		if err := s.tryPage(s.pages.site, builtinName, string(builtin)); err != nil {
			return err
		}
	}
	return nil
}

// placedBlocks collects the templates tree places, following the
// template's own definitions (a {{define}} that places a block counts
// where it is placed).
func placedBlocks(t *template.Template, tree *parse.Tree, placed, seen map[string]bool) {
	if tree == nil || seen[tree.Name] {
		return
	}
	seen[tree.Name] = true
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.TemplateNode:
			placed[n.Name] = true
			if d := t.Lookup(n.Name); d != nil {
				placedBlocks(t, d.Tree, placed, seen)
			}
		case *parse.IfNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.List)
			walk(n.ElseList)
		}
	}
	walk(tree.Root)
}

var htmlTag = regexp.MustCompile(`(?is)<html\b[^>]*>`)

// tryPage runs t for every language and every kind of page, so that an
// error that only shows when it runs (a field that does not exist, an
// asset that is not there, a value where html/template will not print one)
// stops the start rather than a visitor's page, and checks that <html>
// carries the page's language and direction.
func (s *Site) tryPage(t *template.Template, name, text string) error {
	visits := sampleVisits()
	for i, lang := range s.page.langs {
		// Every language with JavaScript, every state without in one
		// language: what a template does differs by state, not by language
		// (but for <html lang dir>, which every run checks).
		runs := visits[:1]
		if i == 0 {
			runs = visits
		}
		for _, v := range runs {
			d := s.samplePage(lang, v)
			var out strings.Builder
			if err := t.Execute(&out, d); err != nil {
				return tidy(err)
			}
			tag := htmlTag.FindString(out.String())
			if !strings.Contains(tag, `lang="`+lang.Code+`"`) || !strings.Contains(tag, `dir="`+lang.Dir()+`"`) {
				return fmt.Errorf(`%s:%d: <html> must carry lang="{{.Lang}}" dir="{{.Dir}}" (in %s it wrote %q)`,
					name, lineOf(text, "<html"), lang.Name, tag)
			}
		}
	}
	return nil
}

// sampleVisits are the pages tryPage runs: with JavaScript, and each state
// of the page without.
func sampleVisits() []Visit {
	now := time.Now()
	out := []Visit{{Queue: "default", Message: func(string) string { return "Restocked: sizes S and M are back <b>now</b>." }}}
	for _, st := range []Standing{
		{State: Waiting, Position: 1234, Length: 5000, Estimate: estimate.Estimate{Seconds: 250, Low: 190, High: 330, Known: true}, PollAfter: 5 * time.Second},
		{State: Waiting, Position: 2, Length: 2, Paused: true, Estimate: estimate.Estimate{Reason: estimate.UnknownPaused}, PollAfter: 60 * time.Second},
		{State: Waiting, Position: 7, Length: 9, Stalled: true, Estimate: estimate.Estimate{Seconds: 3, Reason: estimate.UnknownStalled}, PollAfter: 2 * time.Second},
		{State: Waiting, Drawn: true, Length: 5000, Estimate: estimate.Estimate{Seconds: 125, Low: 12, High: 240, Known: true}, PollAfter: 10 * time.Second},
		{State: Opening, OpensAt: now.Add(time.Hour), PollAfter: 60 * time.Second},
		{State: Ready, ExpiresAt: now.Add(5 * time.Minute)},
		{State: Left}, {State: Full, PollAfter: 30 * time.Second}, {State: Crowded, PollAfter: 5 * time.Second},
		{State: Closed}, {State: SignIn}, {State: Challenge}, {State: NotFound}, {State: Unsupported}, {State: Trouble, PollAfter: 5 * time.Second},
		{State: Waiting, Position: 40, Length: 90, BeyondStock: true, Estimate: estimate.Estimate{Seconds: 200, Reason: estimate.UnknownBeyondStock}, PollAfter: 10 * time.Second},
		{State: SoldOut, KeepsPlace: true, PollAfter: 30 * time.Second}, {State: SoldOut, PollAfter: 30 * time.Second},
	} {
		out = append(out, Visit{Queue: "sample-queue", NoScript: &st})
	}
	// A queue with lanes that take codes: the code field, a place in a
	// lane, a code turned down.
	out = append(out, Visit{Queue: "sample-queue", Codes: true})
	for _, st := range []Standing{
		{State: Waiting, Position: 12, Length: 80, Estimate: estimate.Estimate{Seconds: 40, Low: 28, High: 55, Known: true}, PollAfter: 5 * time.Second, Lane: "members"},
		{State: Waiting, Position: 1234, Length: 5000, Estimate: estimate.Estimate{Seconds: 250, Low: 190, High: 330, Known: true}, PollAfter: 5 * time.Second, Lane: "public", CodeRefused: CodeUsed},
		{State: Left, CodeRefused: CodeInvalid},
	} {
		out = append(out, Visit{Queue: "sample-queue", NoScript: &st, Codes: true})
	}
	return out
}

// samplePage is the data the page would get in lang for v.
func (s *Site) samplePage(lang Language, v Visit) pageData {
	r, _ := newRequest("/q/" + v.Queue + "?lang=" + lang.Code)
	return s.pageData(r, lang, v)
}

// tidy drops html/template's "html/template:" and "template:" prefixes,
// which leave the file and line first: "waiting.html:12: …".
func tidy(err error) error {
	msg := err.Error()
	for _, p := range []string{"html/template:", "template:"} {
		msg = strings.TrimSpace(strings.TrimPrefix(msg, p))
	}
	return errors.New(msg)
}

// position is a node's "file:line:col".
func position(tree *parse.Tree, n parse.Node) string {
	loc, _ := tree.ErrorContext(n)
	return loc
}

// lineOf is the line of the first s in text (case-insensitive), else the
// last line.
func lineOf(text, s string) int {
	i := strings.Index(strings.ToLower(text), strings.ToLower(s))
	if i < 0 {
		i = len(text)
	}
	return 1 + strings.Count(text[:i], "\n")
}

// Check builds the site of a page directory as `waitroom serve --page-dir
// dir` would, without serving it (`waitroom page check`), and describes
// what it found.
func Check(dir string, w io.Writer) error {
	s, err := New(Options{Dir: dir})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: ok, in %d languages\n", dir, len(s.page.langs))
	for _, name := range s.Templates() {
		fmt.Fprintf(w, "  template %s\n", name)
	}
	fmt.Fprintf(w, "  %d assets under %s/assets, served at /assets/custom/\n", len(s.custom.files), dir)
	return nil
}
