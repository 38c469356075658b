package repolint_test

// The operator's dashboard (deploy/grafana) and alert rules
// (deploy/prometheus) query metrics by name; a name the program does not
// serve would leave a panel empty or an alert silent forever, and nothing
// would say so. TestDeployQueriesExist reads every PromQL expression out of
// both files and checks each metric it names on a running instance's
// /metrics.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v4"

	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/testenv"
)

const (
	dashboardFile  = "../../deploy/grafana/waitroom-dashboard.json"
	alertRulesFile = "../../deploy/prometheus/waitroom-alerts.yml"
	// alertTestsFile holds promtool's unit tests of the alert rules.
	alertTestsFile = "../../deploy/prometheus/waitroom-alerts.test.yml"
)

// TestAlertRulesPassPromtool: Prometheus's own checker accepts every rule
// file in deploy/prometheus, and the alerts fire as their unit tests say
// when fed an outage: Redis stopped (WaitroomStoreUnreachable per
// instance, and no page per queue), a Redis Cluster node down
// (WaitroomQueueDegraded for its queue only).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool := testenv.Promtool(t)
	rules, err := filepath.Glob("../../deploy/prometheus/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules = slices.DeleteFunc(rules, func(f string) bool { return strings.HasSuffix(f, ".test.yml") })
	if !slices.Contains(rules, alertRulesFile) {
		t.Fatalf("rule files %v, want %s among them", rules, alertRulesFile)
	}
	for _, args := range [][]string{
		append([]string{"check", "rules"}, rules...),
		{"test", "rules", alertTestsFile},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

func TestDeployQueriesExist(t *testing.T) {
	exposed := exposedMetrics(t)

	queries := map[string]string{} // where → PromQL
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dashboard any
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	dashboardQueries(dashboard, "dashboard", queries)

	raw, err = os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Expr, For string
				Labels           map[string]string
				Annotations      map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "" || r.Expr == "" || r.For == "" || r.Labels["severity"] == "" ||
				r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %q: needs alert, expr, for, labels.severity and annotations.summary and description", r.Alert)
			}
			queries["alert "+r.Alert] = r.Expr
		}
	}
	if want := []string{"WaitroomAdmissionStalled", "WaitroomSoldOut", "WaitroomStoreUnreachable", "WaitroomQueueDegraded", "WaitroomTokensExpiringUnused", "WaitroomEstimatesOff"}; !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}

	// What the issue asked the dashboard and the alerts to watch.
	used := map[string]bool{}
	for where, q := range queries {
		names, err := promqlMetricNames(q)
		if err != nil {
			t.Errorf("%s: %v in %q", where, err, q)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", where, q)
		}
		for _, n := range names {
			used[n] = true
			if !exposed[n] {
				t.Errorf("%s queries %s, which /metrics does not have", where, n)
			}
		}
	}
	for _, n := range []string{
		"waitroom_queue_length", "waitroom_admitted_total", "waitroom_tokens_active",
		"waitroom_order_duration_seconds_bucket", "waitroom_status_answers_total", "waitroom_rejected_total",
		"waitroom_store_up", "waitroom_store_queue_up", "waitroom_tokens_expired_total",
		"waitroom_queue_sold_out", "waitroom_queue_units_left",
		"waitroom_time_in_line_seconds_bucket", "waitroom_estimate_ratio_bucket",
		"waitroom_shadow_length", "waitroom_suspects_total",
	} {
		if !used[n] {
			t.Errorf("neither the dashboard nor the alerts watch %s", n)
		}
	}
	t.Logf("%d queries naming %d metrics: %v", len(queries), len(used), slices.Sorted(maps.Keys(used)))
}

// exposedMetrics boots the program, sends it the traffic that makes every
// labelled series appear (a series with labels exists only once used) and
// returns the sample names on its /metrics.
func exposedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	// The edge's score read from the test's own connections, so that one
	// client scored a bot gives the likely-bot series.
	in := apptest.Boot(t, apptest.Backend{Name: "embedded"}, func(c *app.Config) {
		c.TrustedProxies, c.BotScoreHeader = "127.0.0.1,::1", "X-Bot-Score"
	})
	sale := apptest.Shop{Instance: in}
	q, p := sale.NewSale(5, nil)
	sale.Buy(q, p, "deploy-buyer")
	in.Do("GET", "/api/v1/queues/"+q+"/entries/me", in.As("deploy-buyer"), nil)
	if r := in.Do("GET", "/api/v1/queues/"+q+"/entries/me", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("a request without identity: %d", r.Status)
	}
	if r := in.Do("POST", "/api/v1/queues/"+q+"/entries", in.As("deploy-bot"), nil, "X-Bot-Score", "2"); r.Status != http.StatusOK {
		t.Fatalf("a client the edge scores a bot: %d %s, want a (shadow) place", r.Status, r.Raw)
	}
	// A queue with phases has its phase series.
	in.PatchQueue(q, map[string]any{"phases": []any{map[string]any{"name": "members", "startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}}})
	names := map[string]bool{}
	for series := range apptest.Metrics(t, in.Base) {
		name, _, _ := strings.Cut(series, "{")
		names[name] = true
	}
	return names
}

// dashboardQueries collects the PromQL of a Grafana dashboard: every
// target's expr, and the metric of every label_values(…) variable.
func dashboardQueries(v any, where string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		title, _ := v["title"].(string)
		if title == "" {
			title, _ = v["name"].(string)
		}
		if title != "" {
			where += " / " + title
		}
		for k, sub := range v {
			if s, ok := sub.(string); ok && k == "expr" {
				out[fmt.Sprintf("%s / %s", where, v["refId"])] = s
			}
			if s, ok := sub.(string); ok && (k == "definition" || k == "query") {
				if m := labelValues.FindStringSubmatch(s); m != nil {
					out[where+" (variable)"] = m[1]
				}
			}
			dashboardQueries(sub, where, out)
		}
	case []any:
		for _, sub := range v {
			dashboardQueries(sub, where, out)
		}
	}
}

// labelValues is Grafana's label_values(metric, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*([^,()\s]+)\s*,`)

// promqlMetricNames returns the metric names a PromQL expression selects,
// in order of appearance (once each). It is a lexer, not a parser: it skips
// strings, label matchers ({…}), ranges ([…]), numbers and durations,
// Grafana variables ($x), functions and aggregations (a name followed by
// "(", and the aggregation operators), the label lists of by/without/on/ignoring/group_left/group_right
// and the keywords; every other name is a metric. It refuses unbalanced
// brackets and unterminated strings.
func promqlMetricNames(expr string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	rs := []rune(expr)
	next := func(i int) int { // the first non-space at or after i
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		return i
	}
	var depth []rune // open brackets
	closing := map[rune]rune{')': '(', ']': '[', '}': '{'}
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '"' || c == '\'' || c == '`':
			end := skipString(rs, i)
			if end < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			i = end
		case c == '#':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case c == '{' || c == '[':
			// Label matchers and ranges name no metric.
			end, err := skipGroup(rs, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '(':
			depth = append(depth, c)
			i++
		case c == ')' || c == ']' || c == '}':
			if len(depth) == 0 || depth[len(depth)-1] != closing[c] {
				return nil, fmt.Errorf("unbalanced %q at %d", c, i)
			}
			depth = depth[:len(depth)-1]
			i++
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			for i < len(rs) && (isNameRune(rs[i]) || rs[i] == '.') {
				i++ // a number or a duration: 0.95, 1e3, 5m
			}
		case c == '$':
			i++
			if i < len(rs) && rs[i] == '{' {
				end, err := skipGroup(rs, i)
				if err != nil {
					return nil, err
				}
				i = end
			}
			for i < len(rs) && isNameRune(rs[i]) {
				i++
			}
		case isNameRune(c):
			start := i
			for i < len(rs) && isNameRune(rs[i]) {
				i++
			}
			name := string(rs[start:i])
			after := next(i)
			followedByParen := after < len(rs) && rs[after] == '('
			switch {
			case labelListKeywords[name] && followedByParen:
				end, err := skipGroup(rs, after)
				if err != nil {
					return nil, err
				}
				i = end
			case followedByParen, promqlKeywords[strings.ToLower(name)]:
				// a function or aggregation, or a keyword
			default:
				if !seen[name] {
					seen[name] = true
					names = append(names, name)
				}
			}
		default:
			i++ // operators, commas, @
		}
	}
	if len(depth) > 0 {
		return nil, fmt.Errorf("%d unclosed brackets", len(depth))
	}
	return names, nil
}

var (
	labelListKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	// The keywords, and the aggregation operators, which may come before
	// their "(" with a by/without clause between.
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "atan2": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
		"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true}
)

func isNameRune(r rune) bool {
	return r == '_' || r == ':' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// skipString returns the index after the string starting at i (-1 when it
// never ends); backslash escapes apply except in backquotes.
func skipString(rs []rune, i int) int {
	q := rs[i]
	for j := i + 1; j < len(rs); j++ {
		switch {
		case rs[j] == '\\' && q != '`':
			j++
		case rs[j] == q:
			return j + 1
		}
	}
	return -1
}

// skipGroup returns the index after the bracket group opening at i, strings
// and nested groups included.
func skipGroup(rs []rune, i int) (int, error) {
	open := rs[i]
	shut := map[rune]rune{'(': ')', '[': ']', '{': '}'}[open]
	for j, level := i, 0; j < len(rs); j++ {
		switch rs[j] {
		case '"', '\'', '`':
			end := skipString(rs, j)
			if end < 0 {
				return 0, fmt.Errorf("unterminated string at %d", j)
			}
			j = end - 1
		case open:
			level++
		case shut:
			if level--; level == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unclosed %q at %d", open, i)
}

func TestPromQLMetricNames(t *testing.T) {
	tests := []struct {
		expr    string
		want    []string
		wantErr bool
	}{
		{expr: `waitroom_store_up == 0`, want: []string{"waitroom_store_up"}},
		{expr: `max by (queue) (waitroom_queue_length{queue=~"$queue"})`, want: []string{"waitroom_queue_length"}},
		{expr: `sum(rate(a_total{x="}",y='b'}[$__rate_interval])) by (le, route)`, want: []string{"a_total"}},
		{expr: `histogram_quantile(0.95, sum by (le) (rate(h_bucket[5m])))`, want: []string{"h_bucket"}},
		{expr: `a > 0.2 * b and on (queue) c unless ignoring(x) group_left(y) d offset 5m`, want: []string{"a", "b", "c", "d"}},
		{expr: `max by (queue) (x) < on (queue) max by (queue) (y) > bool 1e3`, want: []string{"x", "y"}},
		{expr: "rate(x[5m:1m]) # a comment naming no_metric\n + job:requests:rate5m", want: []string{"x", "job:requests:rate5m"}},
		{expr: `time() - 1`},
		{expr: `sum(x`, wantErr: true},
		{expr: `sum(x))`, wantErr: true},
		{expr: `x{a="b}`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := promqlMetricNames(tt.expr)
		if (err != nil) != tt.wantErr {
			t.Errorf("promqlMetricNames(%q) error %v, want an error: %v", tt.expr, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("promqlMetricNames(%q) (-want +got):\n%s", tt.expr, diff)
		}
	}
}
