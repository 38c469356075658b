package web

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
)

// A language the pages are written in: its texts are messages/page/{Code}.json
// (and messages/admin/{Code}.json for the admin page).
type Language struct {
	// Code is the language's BCP 47 tag as the pages write it: lang="…",
	// ?lang=…, the texts' file name.
	Code string
	Tag  language.Tag
	// Name is the language's name in itself (its texts' languageName).
	Name string
	// RTL: written right to left (dir="rtl").
	RTL bool
}

// Dir is the page's writing direction, for <html dir>.
func (l Language) Dir() string {
	if l.RTL {
		return "rtl"
	}
	return "ltr"
}

// pageCodes are the waiting page's languages, English first: the fallback
// when none of the visitor's languages is among them. A language is added
// by adding its messages/page file and its code here.
var pageCodes = []string{"en", "ar", "de", "es", "fr", "ja", "ko", "pt-BR", "zh-Hans", "zh-Hant"}

// rtlScripts are the scripts written right to left among the languages
// this package could be given.
var rtlScripts = []string{"Arab", "Hebr", "Thaa", "Syrc", "Nkoo", "Adlm", "Rohg"}

// catalog is a set of languages with their texts, and the matcher that
// picks one of them for a request.
type catalog struct {
	langs   []Language
	texts   map[string]map[string]string // Code → key → text
	matcher language.Matcher
}

// loadCatalog reads dir/{code}.json for every code.
func loadCatalog(files fs.FS, dir string, codes []string) (*catalog, error) {
	c := &catalog{texts: map[string]map[string]string{}}
	tags := make([]language.Tag, 0, len(codes))
	for _, code := range codes {
		tag, err := language.Parse(code)
		if err != nil {
			return nil, fmt.Errorf("language %q: %w", code, err)
		}
		raw, err := fs.ReadFile(files, path.Join(dir, code+".json"))
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s/%s.json: %w", dir, code, err)
		}
		script, _ := tag.Script()
		c.langs = append(c.langs, Language{Code: code, Tag: tag, Name: m["languageName"], RTL: slices.Contains(rtlScripts, script.String())})
		c.texts[code] = m
		tags = append(tags, tag)
	}
	c.matcher = language.NewMatcher(tags)
	return c, nil
}

// choose picks the language for a request: the one ?lang= names, else the
// best for its Accept-Language, else the first (English). x/text's matcher
// weighs the header's q values, regional variants (es-MX is Spanish) and
// what readers of a language not offered also read; a match it is not at
// least highly confident of does not count, so a visitor asking for zh-TW
// reads Traditional Chinese or else English, never Simplified.
func (c *catalog) choose(r *http.Request) Language {
	asked := RequestLanguages(r)
	if len(asked[0]) == 1 {
		// ?lang= names a language: its own (a regional variant, the other
		// script's never), not the one its readers are likely to know as
		// well (the matcher offers English for Swahili).
		_, i, conf := c.matcher.Match(asked[0]...)
		want, _ := asked[0][0].Base()
		got, _ := c.langs[i].Tag.Base()
		if conf >= language.High && want == got {
			return c.langs[i]
		}
	}
	if len(asked[1]) > 0 {
		if _, i, conf := c.matcher.Match(asked[1]...); conf >= language.High {
			return c.langs[i]
		}
	}
	return c.langs[0]
}

// RequestLanguages are the languages a request asks for, in two rounds:
// ?lang= (one tag), then its Accept-Language (in order of preference).
// Either may be empty; malformed entries are left out.
func RequestLanguages(r *http.Request) [2][]language.Tag {
	var out [2][]language.Tag
	if r.URL.RawQuery != "" {
		if v := r.URL.Query().Get("lang"); v != "" {
			if t, err := language.Parse(v); err == nil {
				out[0] = []language.Tag{t}
			}
		}
	}
	if h := r.Header.Get("Accept-Language"); h != "" {
		out[1], _, _ = language.ParseAcceptLanguage(h)
	}
	return out
}

// link is one entry of the language switch: the same page in another
// language.
type link struct {
	Code, Name string
	URL        string
	Current    bool
}

// links are the language switch for the page at base+r.URL.Path: every
// language, the same query but for ?lang=.
func (c *catalog) links(r *http.Request, base string, current Language) []link {
	q := r.URL.Query()
	out := make([]link, 0, len(c.langs))
	for _, l := range c.langs {
		q.Set("lang", l.Code)
		out = append(out, link{Code: l.Code, Name: l.Name, Current: l.Code == current.Code,
			URL: (&url.URL{Path: base + r.URL.Path, RawQuery: q.Encode()}).String()})
	}
	return out
}

// pluralForms are CLDR's plural categories, as Intl.PluralRules names them.
var pluralForms = map[plural.Form]string{
	plural.Other: "other", plural.Zero: "zero", plural.One: "one", plural.Two: "two", plural.Few: "few", plural.Many: "many",
}

// pluralKey is the text key for a count: key + "." + the count's plural
// category in the language (aheadMany.one, aheadMany.few), as the page's
// script picks it with Intl.PluralRules.
func pluralKey(tag language.Tag, key string, n int64) string {
	form := plural.Cardinal.MatchPlural(tag, int(min(n, 1<<31-1)), 0, 0, 0, 0)
	return key + "." + pluralForms[form]
}

// PluralFormsNeeded are the plural categories tag's counts fall in (for
// whole numbers), which every plural text of that language must have.
func PluralFormsNeeded(tag language.Tag) []string {
	seen := map[string]bool{}
	for n := range 1000 {
		seen[pluralForms[plural.Cardinal.MatchPlural(tag, n, 0, 0, 0, 0)]] = true
	}
	var out []string
	for f := range seen {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// PageLanguages are the waiting page's language codes, English first.
func PageLanguages() []string { return slices.Clone(pageCodes) }

// AdminLanguages are the admin page's.
func AdminLanguages() []string { return slices.Clone(adminCodes) }

// SettingHelp says in English what the per-queue setting named name does:
// the admin page's text settingHelp<Name>, which the admin API's settings
// and --help serve too, and which every other admin language translates
// in its own file.
func SettingHelp(name string) string {
	if name == "" {
		return ""
	}
	return adminEnglish()["settingHelp"+strings.ToUpper(name[:1])+name[1:]]
}

// adminEnglish are the admin page's English texts, read once from the
// embedded files (a file that does not parse fails every test of the pages).
var adminEnglish = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	raw, err := fs.ReadFile(files, "messages/admin/en.json")
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err != nil {
		panic("web: messages/admin/en.json: " + err.Error())
	}
	return m
})
