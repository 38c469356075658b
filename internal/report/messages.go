package report

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The report's texts are messages/{code}.json, one per language, as the
// pages keep theirs (internal/web/messages): the admin page's languages,
// since the report is the operators'.
//
//go:embed messages
var messageFiles embed.FS

// codes are the report's languages, English first: the fallback.
var codes = []string{"en", "ko"}

// Languages are the report's language codes, English first.
func Languages() []string { return slices.Clone(codes) }

// catalogue holds every language's texts, read once (a file that does not
// parse fails every test of the package).
var catalogue = sync.OnceValue(func() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, code := range codes {
		raw, err := messageFiles.ReadFile("messages/" + code + ".json")
		m := map[string]string{}
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		if err != nil {
			panic("report: messages/" + code + ".json: " + err.Error())
		}
		out[code] = m
	}
	return out
})

var matcher = sync.OnceValue(func() language.Matcher {
	tags := make([]language.Tag, len(codes))
	for i, c := range codes {
		tags[i] = language.MustParse(c)
	}
	return language.NewMatcher(tags)
})

// Language picks the report's language for the languages asked for, in
// order of preference (a request's ?lang= then Accept-Language): the first
// the report is written in, else English.
func Language(asked ...language.Tag) string {
	if len(asked) == 0 {
		return codes[0]
	}
	_, i, conf := matcher().Match(asked...)
	if conf < language.High {
		return codes[0]
	}
	return codes[i]
}

// texts is one language's texts, with its number formats.
type texts struct {
	code string
	m    map[string]string
	p    *message.Printer
}

func textsFor(code string) (texts, error) {
	m, ok := catalogue()[code]
	if !ok {
		return texts{}, fmt.Errorf("report: no language %q (have %v)", code, codes)
	}
	return texts{code: code, m: m, p: message.NewPrinter(language.MustParse(code))}, nil
}

// t is the text key with each {name} replaced by the value after it.
func (x texts) t(key string, pairs ...string) string {
	s, ok := x.m[key]
	if !ok {
		s = x.m[strings.TrimPrefix(key, "moment.")] // an unknown kind of moment: as written
		if s == "" {
			s = strings.TrimPrefix(key, "moment.")
		}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		s = strings.ReplaceAll(s, "{"+pairs[i]+"}", pairs[i+1])
	}
	return s
}

// signal names a likely bot's signal (package suspect's names); one the
// report has no words for is shown as it is written.
func (x texts) signal(name string) string {
	if s, ok := x.m["signal."+name]; ok {
		return s
	}
	return name
}

// known is s when ok, else the sign for a figure not known.
func (x texts) known(ok bool, s string) string {
	if !ok {
		return x.t("notKnown")
	}
	return s
}

// count is a whole number in the language's grouping (12,345).
func (x texts) count(n int64) string { return x.p.Sprintf("%d", n) }

// decimal is v with at most digits decimals (2.5, 100).
func (x texts) decimal(v float64, digits int) string {
	s := x.p.Sprintf("%.*f", digits, v)
	if digits > 0 && strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func (x texts) percent(part, whole int64) string {
	if whole == 0 {
		return x.t("notKnown")
	}
	return x.t("percent", "n", x.decimal(100*float64(part)/float64(whole), 1))
}

func (x texts) ratio(v float64) string { return x.t("ratio", "n", x.decimal(v, 2)) }

// duration is seconds as people say a wait: 45 s, 3 min 7 s, 1 h 5 min.
func (x texts) duration(seconds float64) string {
	s := int64(math.Round(seconds))
	switch {
	case s >= 3600:
		return x.t("durH", "h", x.count(s/3600), "m", x.count(s%3600/60))
	case s >= 60:
		return x.t("durM", "m", x.count(s/60), "s", x.count(s%60))
	}
	return x.t("durS", "s", x.count(s))
}

// axisDuration labels a gridline of durationSteps: in the largest unit
// it is a whole number of.
func (x texts) axisDuration(seconds float64) string {
	s := int64(math.Round(seconds))
	switch {
	case s > 0 && s%3600 == 0:
		return x.t("axisH", "h", x.count(s/3600))
	case s > 0 && s%60 == 0:
		return x.t("axisM", "m", x.count(s/60))
	}
	return x.t("axisS", "s", x.count(s))
}

// clock writes an instant for the report's readers, in its zone.
func clock(t time.Time, loc *time.Location) string { return t.In(loc).Format("2006-01-02 15:04") }

// clockShort is an instant on the charts' axes and in their tables.
func clockShort(t time.Time, loc *time.Location) string { return t.In(loc).Format("15:04") }
