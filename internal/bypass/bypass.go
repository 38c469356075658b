// Package bypass owns the rules that let staff and monitors past the line
// (--bypass): a client address in a CIDR, told as --trusted-proxies tells
// it, or a secret header, each for every queue or for one. It reads HTTP
// requests, so it is an adapter's concern: the gateway and the API share
// it, and the line (package queue) never hears of it.
//
// A bypassed request takes nothing from the line: no place, no entry token
// in the store, no share of the admission rate or of maxActiveTokens.
package bypass

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"

	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/queue"
)

// MinSecretLen is the shortest header value a rule accepts: the header is
// the only thing between anyone and the front of the line, so it must not
// be guessable.
const MinSecretLen = 16

// reserved are headers a rule may not name: waitroom reads them itself,
// and the gateway strips a rule's header before the upstream sees it.
var reserved = []string{"Authorization", "Cookie", "Host", "X-Entry-Token"}

// Rule is one --bypass rule.
type Rule struct {
	// Label names the rule without its secret ("cidr 10.0.0.0/8",
	// "header X-Staff-Key queue=sale"): the metric's label, the logs'.
	Label  string
	prefix netip.Prefix // a cidr rule's
	header string       // a header rule's name, canonical
	digest [sha256.Size]byte
	queue  string // "" for every queue
}

// Rules are the --bypass rules, with the client addresses' resolver their
// cidr rules read. A nil *Rules lets nobody past.
type Rules struct {
	rules []Rule
	addrs clientaddr.Resolver
	cidr  bool // some rule is a cidr rule: only then is the address worked out
}

// Parse reads the rules, one a spec:
//
//	cidr 10.0.0.0/8 [queue=NAME]
//	header X-Staff-Key=VALUE [queue=NAME]
//	header X-Staff-Key=@/path/to/file [queue=NAME]
//
// A value from a file loses its trailing newline. An error names the bad
// rule, never its secret. addrs tells a client's address (--trusted-proxies);
// readFile reads a value's file (os.ReadFile).
func Parse(specs []string, addrs clientaddr.Resolver, readFile func(string) ([]byte, error)) (*Rules, error) {
	rs := &Rules{addrs: addrs}
	var errs []error
	for _, spec := range specs {
		r, err := parseRule(spec, readFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", redacted(spec), err))
			continue
		}
		rs.cidr = rs.cidr || r.prefix.IsValid()
		rs.rules = append(rs.rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rs, nil
}

func parseRule(spec string, readFile func(string) ([]byte, error)) (Rule, error) {
	words := strings.Fields(spec)
	if len(words) < 2 {
		return Rule{}, errors.New("want 'cidr CIDR' or 'header NAME=VALUE', optionally followed by queue=NAME")
	}
	var r Rule
	if len(words) == 3 {
		name, ok := strings.CutPrefix(words[2], "queue=")
		if !ok {
			return Rule{}, fmt.Errorf("%q: want queue=NAME after the rule", cut(words[2]))
		}
		if err := queue.ValidateQueueName(name); err != nil {
			return Rule{}, fmt.Errorf("queue=%s: %v", name, err)
		}
		r.queue = name
	} else if len(words) > 3 {
		return Rule{}, errors.New("too many words (a header value with spaces must come from a file: NAME=@/path)")
	}
	switch kind, arg := words[0], words[1]; kind {
	case "cidr":
		p, err := clientaddr.ParsePrefix(arg)
		if err != nil {
			return Rule{}, fmt.Errorf("bad CIDR: %v", err)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 { // client addresses are read unmapped
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		r.prefix = p
		r.Label = "cidr " + r.prefix.String()
	case "header":
		name, value, err := headerRule(arg, readFile)
		if err != nil {
			return Rule{}, err
		}
		r.header, r.digest = name, sha256.Sum256([]byte(value))
		r.Label = "header " + name
	default:
		return Rule{}, fmt.Errorf("unknown kind %q (want cidr or header)", kind)
	}
	if r.queue != "" {
		r.Label += " queue=" + r.queue
	}
	return r, nil
}

// headerRule reads NAME=VALUE or NAME=@FILE: the header's canonical name
// and the secret.
func headerRule(arg string, readFile func(string) ([]byte, error)) (name, value string, err error) {
	name, value, ok := strings.Cut(arg, "=")
	if !ok {
		return "", "", errors.New("missing '=' (want header NAME=VALUE or NAME=@/path)")
	}
	if !validName(name) {
		return "", "", fmt.Errorf("%q is not a header name", name)
	}
	name = textproto.CanonicalMIMEHeaderKey(name)
	if slices.Contains(reserved, name) || strings.HasPrefix(name, "X-Waitroom-") {
		return "", "", fmt.Errorf("%s is a header waitroom reads or writes itself: choose another", name)
	}
	where := "value"
	if path, ok := strings.CutPrefix(value, "@"); ok {
		raw, err := readFile(path)
		if err != nil {
			return "", "", fmt.Errorf("reading the value: %v", err)
		}
		value, where = strings.TrimRight(string(raw), "\r\n"), "value in "+path
	}
	switch {
	case value == "":
		return "", "", fmt.Errorf("empty %s", where)
	case len(value) < MinSecretLen:
		return "", "", fmt.Errorf("the %s is %d bytes: at least %d, so nobody guesses it (e.g. openssl rand -hex 32)", where, len(value), MinSecretLen)
	case strings.TrimSpace(value) != value:
		return "", "", fmt.Errorf("the %s starts or ends with white space, which HTTP drops from a header", where)
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return "", "", fmt.Errorf("the %s holds a control character, which no header can carry", where)
		}
	}
	return name, value, nil
}

// validName reports an HTTP header name: a token (RFC 9110).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// redacted is a spec as an error may show it: a header rule without its
// value, anything else without what follows its kind's first word.
func redacted(spec string) string {
	words := strings.Fields(spec)
	switch {
	case len(words) == 0:
		return "an empty rule"
	case words[0] == "cidr":
		return fmt.Sprintf("%q", spec)
	case words[0] == "header" && len(words) > 1:
		// A name only where it is one: "X-Staff-Key:VALUE" or a missing
		// "=" would show the value as part of it.
		if name, _, ok := strings.Cut(words[1], "="); ok && validName(name) {
			return fmt.Sprintf("%q", "header "+name+"=…")
		}
		return `"header …"`
	}
	return fmt.Sprintf("a rule starting %q", cut(words[0]))
}

// cut shortens a word an error shows: it may be part of a secret split by
// mistake.
func cut(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}

// Match reports the first rule that lets r past the line of queue q, and
// its label.
func (rs *Rules) Match(r *http.Request, q string) (string, bool) {
	if rs == nil || len(rs.rules) == 0 {
		return "", false
	}
	var addr netip.Addr
	if rs.cidr {
		addr = rs.addrs.Addr(r)
	}
	for i := range rs.rules {
		rule := &rs.rules[i]
		if (q == "" || rule.queue == "" || rule.queue == q) && rule.matches(r, addr) {
			return rule.Label, true
		}
	}
	return "", false
}

// MatchAnyQueue reports whether some rule lets r past some queue's line:
// a cheap first look before the queue is known.
func (rs *Rules) MatchAnyQueue(r *http.Request) bool {
	_, ok := rs.Match(r, "")
	return ok
}

func (rule *Rule) matches(r *http.Request, addr netip.Addr) bool {
	if rule.prefix.IsValid() {
		return addr.IsValid() && rule.prefix.Contains(addr)
	}
	for _, v := range r.Header[rule.header] {
		// Compared as digests, in constant time: neither the value nor its
		// length shows in how long a wrong guess takes.
		d := sha256.Sum256([]byte(v))
		if subtle.ConstantTimeCompare(d[:], rule.digest[:]) == 1 {
			return true
		}
	}
	return false
}

// Headers are the rules' secret headers, by canonical name: the gateway
// strips them (in any spelling) from every request it forwards.
func (rs *Rules) Headers() []string { return rs.each(func(r Rule) string { return r.header }) }

// Labels are the rules' labels, in order.
func (rs *Rules) Labels() []string { return rs.each(func(r Rule) string { return r.Label }) }

// each is what of every rule is not empty, each once, in order.
func (rs *Rules) each(what func(Rule) string) []string {
	if rs == nil {
		return nil
	}
	var out []string
	for _, r := range rs.rules {
		if v := what(r); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
