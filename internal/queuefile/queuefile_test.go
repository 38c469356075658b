package queuefile_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"github.com/waitroom/waitroom/internal/queuefile"
)

const example = "../../deploy/queues.yaml"

// The repository's example file reads as its comments say.
func TestParseExample(t *testing.T) {
	raw, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	f, err := queuefile.Parse(example, raw, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range f.Queues {
		names = append(names, q.Name)
	}
	if diff := cmp.Diff([]string{"default", "spring-sale", "winter-sale", "members", "summer-drop", "backstage"}, names); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
	if f.Prune {
		t.Error("prune: want false")
	}
	sale, _ := f.Queue("spring-sale")
	opens, _ := time.Parse(time.RFC3339, "2027-03-20T10:00:00+09:00")
	checks := []struct {
		name      string
		got, want any
	}{
		{"rate", sale.Config.RatePerSecond, 200.0},
		{"batch", sale.Config.BatchSize, 40},
		{"ttl", sale.Config.TokenTTL, 10 * time.Minute},
		{"max active", sale.Config.MaxActiveTokens, int64(2000)},
		{"abandon", sale.Config.AbandonAfter, 2 * time.Minute},
		{"opens", sale.Config.OpensAt, opens.UTC()},
		{"closes", sale.Config.ClosesAt, opens.Add(2 * time.Hour).UTC()},
		{"entry", sale.Config.Join, queue.JoinChallenge},
		{"message", settingValue("message", sale.Config), map[string]string{"en": "Spring sale: 500 pairs, one per customer.", "ja": "春のセール：500足、お一人様一足まで。"}},
		{"derivation", sale.Config.RateDerivation, "set by the queues file"},
		// Left out: the base config's.
		{"paused", sale.Config.Paused, false},
		{"target latency", sale.Config.TargetLatency, queue.DefaultConfig().TargetLatency},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("spring-sale %s (-want +got):\n%s", c.name, diff)
		}
	}
	if q, _ := f.Queue("backstage"); !q.Config.Paused || q.Config.RatePerSecond != queue.DefaultConfig().RatePerSecond {
		t.Errorf("backstage: paused %v rate %v, want paused at the base rate", q.Config.Paused, q.Config.RatePerSecond)
	}
	if q, _ := f.Queue("members"); !q.Config.Adaptive || q.Config.MaxRate != 80 || q.Line == 0 {
		t.Errorf("members: %+v", q)
	}
	// Phases: the members' draw from an unquoted instant, which opens the
	// queue, then the public at the queue's own settings.
	winter, _ := f.Queue("winter-sale")
	members := winter.Config.InForce(time.Date(2027, 12, 1, 1, 0, 0, 0, time.UTC))
	public := winter.Config.InForce(time.Date(2027, 12, 1, 2, 0, 0, 0, time.UTC))
	if len(winter.Config.Phases) != 2 || !winter.Config.OpensAt.Equal(time.Date(2027, 12, 1, 1, 0, 0, 0, time.UTC)) ||
		members.PhaseInForce != "members" || members.Method != queue.MethodRandom || members.RatePerSecond != 50 || members.Join != queue.JoinSigned ||
		public.PhaseInForce != "public" || public.Method != queue.MethodFIFO || public.RatePerSecond != 100 ||
		public.Message.For() != "Open to everyone, first come." {
		t.Errorf("winter-sale: opens %v, members %+v, public %+v", winter.Config.OpensAt, members, public)
	}
	// Lanes, a list of mappings as the admin JSON's objects.
	drop, _ := f.Queue("summer-drop")
	wantLanes := lane.List{{Name: "gold", Claim: "tier=gold", Share: 0.3}, {Name: "invited", Codes: true, Share: 0.2}, {Name: lane.Public, Share: 0.5}}
	if diff := cmp.Diff(wantLanes, drop.Config.Lanes); diff != "" {
		t.Errorf("summer-drop's lanes (-want +got):\n%s", diff)
	}
	// The stock the sale starts with, which is no setting; a queue that
	// gives none has none.
	if sale.UnitsLeft == nil || *sale.UnitsLeft != 500 || slices.Contains(sale.Set, "unitsLeft") {
		t.Errorf("spring-sale's units left: %v (settings %v), want 500 and no setting", sale.UnitsLeft, sale.Set)
	}
	if q, _ := f.Queue("members"); q.UnitsLeft != nil {
		t.Errorf("members' units left: %d, want none", *q.UnitsLeft)
	}
}

// A file that cannot work is refused whole, naming the file, the line and
// the setting.
func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // in the error
	}{
		{"unknown setting", "queues:\n  sale:\n    ratePerSecond: 10\n    rate: 5\n", []string{"q.yaml:4:", `"sale"`, `unknown setting "rate"`, "ratePerSecond"}},
		{"read-only setting", "queues:\n  sale:\n    rateDerivation: mine\n", []string{"q.yaml:3:", `unknown setting "rateDerivation"`}},
		{"out of range", "queues:\n  a:\n  sale:\n    batchSize: 10\n    ratePerSecond: 0\n", []string{"q.yaml:5:", `"sale"`, "ratePerSecond must be > 0"}},
		{"above the maximum", "queues:\n  sale:\n    capacity: 1000000000\n", []string{"q.yaml:3:", "capacity must be 1..100000000"}},
		{"a fraction for an integer", "queues:\n  sale:\n    batchSize: 2.5\n", []string{"q.yaml:3:", "batchSize must be a whole number, got 2.5"}},
		{"a quoted number", "queues:\n  sale:\n    ratePerSecond: \"10\"\n", []string{"q.yaml:3:", "ratePerSecond must be a number"}},
		{"not a choice", "queues:\n  sale:\n    entry: everyone\n", []string{"q.yaml:3:", "entry must be any, challenge, signed or turnstile"}},
		{"not a time", "queues:\n  sale:\n    opensAt: tomorrow\n", []string{"q.yaml:3:", "opensAt must be an RFC 3339 time"}},
		{"not a language", "queues:\n  sale:\n    message: {en: hi, \"not a tag!\": x}\n", []string{"q.yaml:3:", "not a language tag"}},
		{"rules between settings", "queues:\n  x: {}\n  sale:\n    ratePerSecond: 500\n", []string{"q.yaml:3:", `"sale"`, "exceeds batchSize"}},
		{"closes before it opens", "queues:\n  sale:\n    opensAt: 2027-01-02T00:00:00Z\n    closesAt: 2027-01-01T00:00:00Z\n", []string{"q.yaml:2:", "closesAt", "opensAt"}},
		{"a bad queue name", "queues:\n  \"a b\": {}\n", []string{"q.yaml:2:", `"a b"`}},
		{"a queue named twice", "queues:\n  sale: {}\n  sale: {}\n", []string{"q.yaml:3:", `"sale" is named twice`}},
		{"a setting named twice", "queues:\n  sale:\n    paused: true\n    paused: false\n", []string{"q.yaml:4:", `"paused" is named twice`}},
		{"unknown top-level key", "prune: true\nqueue:\n  sale: {}\n", []string{"q.yaml:2:", `unknown key "queue"`}},
		{"prune not a bool", "prune: yes please\nqueues: {}\n", []string{"q.yaml:1:", "prune must be true or false"}},
		{"no queues", "prune: true\n", []string{"q.yaml:1:", "no queues"}},
		{"queues a list", "queues:\n  - sale\n", []string{"q.yaml:2:", "mapping of queue names"}},
		{"settings a list", "queues:\n  sale: [1, 2]\n", []string{"q.yaml:2:", "mapping of settings"}},
		{"negative units left", "queues:\n  sale:\n    unitsLeft: -1\n", []string{"q.yaml:3:", `"sale"`, "unitsLeft must be a whole number from 0 to 1000000000, got -1"}},
		{"units left past the most", "queues:\n  sale:\n    unitsLeft: 1000000001\n", []string{"q.yaml:3:", "unitsLeft must be"}},
		{"a fraction of a unit", "queues:\n  sale:\n    unitsLeft: 2.5\n", []string{"q.yaml:3:", "unitsLeft must be", "got 2.5"}},
		{"units left quoted", "queues:\n  sale:\n    unitsLeft: \"500\"\n", []string{"q.yaml:3:", "unitsLeft must be"}},
		{"units left twice", "queues:\n  sale:\n    unitsLeft: 5\n    unitsLeft: 6\n", []string{"q.yaml:4:", `"unitsLeft" is named twice`}},
		{"webhooks a number", "queues:\n  sale:\n    webhooks: 5\n", []string{"q.yaml:3:", `"sale"`, "webhooks must be a list of URLs, got 5"}},
		{"webhooks a mapping", "queues:\n  sale:\n    webhooks: {a: b}\n", []string{"q.yaml:3:", "webhooks must be a list of URLs"}},
		{"a webhook not over HTTP", "queues:\n  sale:\n    webhooks: [ftp://shop.example/x]\n", []string{"q.yaml:3:", "webhooks", "want an http:// or https:// URL"}},
		{"a webhook without a host", "queues:\n  sale:\n    webhooks: ['https:///x']\n", []string{"q.yaml:3:", "no host"}},
		{"lanes a mapping", "queues:\n  sale:\n    lanes: {public: 1}\n", []string{"q.yaml:3:", "lanes must be a list of lanes"}},
		{"lanes without public", "queues:\n  sale:\n    lanes: [{name: gold, claim: tier=gold, share: 1}]\n", []string{"q.yaml:", "public"}},
		{"a lane's unknown field", "queues:\n  sale:\n    lanes: [{name: public, share: 1, weight: 2}]\n", []string{"q.yaml:3:", "weight"}},
		{"empty", "", []string{"q.yaml: empty"}},
		{"not YAML", "queues: {sale: [\n", []string{"q.yaml:", "yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := queuefile.Parse("q.yaml", []byte(tt.yaml), queue.DefaultConfig())
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			t.Log(err)
			if f != nil {
				t.Errorf("a file came back with the error: %+v", f)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A queue's webhooks are no setting: the URLs that receive its events, a
// list or one alone, each once.
func TestParseWebhooks(t *testing.T) {
	const yaml = "queues:\n  sale:\n    webhooks: [https://shop.example/a, 'http://10.0.0.5:3000/b?k=1', https://shop.example/a]\n" +
		"  drop:\n    webhooks: https://shop.example/c\n  quiet: {}\n"
	f, err := queuefile.Parse("q.yaml", []byte(yaml), queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"sale":  {"https://shop.example/a", "http://10.0.0.5:3000/b?k=1"},
		"drop":  {"https://shop.example/c"},
		"quiet": nil,
	} {
		q, _ := f.Queue(name)
		if diff := cmp.Diff(want, q.Webhooks); diff != "" || slices.Contains(q.Set, "webhooks") {
			t.Errorf("%s's webhooks (-want +got):\n%s (settings %v)", name, diff, q.Set)
		}
	}
}

// The settings a file leaves out are the base's, so the file and the
// command line's defaults for new queues agree; an empty queue is the base.
func TestParseStartsFromBase(t *testing.T) {
	base := queue.DefaultConfig()
	base.RatePerSecond, base.Capacity = 7, 77
	f, err := queuefile.Parse("q.yaml", []byte("prune: true\nqueues:\n  plain:\n  sale:\n    capacity: 5\n"), base)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := f.Queue("plain")
	if diff := queuefile.Diff(base, plain.Config); len(diff) != 0 || !f.Prune {
		t.Errorf("plain differs from the base: %+v (prune %v)", diff, f.Prune)
	}
	sale, _ := f.Queue("sale")
	want := []queuefile.Difference{{Setting: "capacity", Have: "77", Want: "5"}}
	if diff := cmp.Diff(want, queuefile.Diff(base, sale.Config)); diff != "" {
		t.Errorf("sale (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"capacity"}, sale.Set); diff != "" {
		t.Errorf("Set (-want +got):\n%s", diff)
	}
}

// Whatever the bytes, Parse answers with a file or an error, and a file's
// every queue has a config the store accepts.
func FuzzParse(f *testing.F) {
	if raw, err := os.ReadFile(example); err == nil {
		f.Add(raw)
	}
	f.Add([]byte("queues:\n  a: {ratePerSecond: 1e300}\n"))
	f.Add([]byte("queues: &x {a: *x}\n"))
	f.Add([]byte("prune: true\nqueues:\n  a:\n    message: {en: hi}\n"))
	f.Add([]byte("queues:\n  a: {unitsLeft: 0x10}\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		file, err := queuefile.Parse("f.yaml", raw, queue.DefaultConfig())
		if err != nil {
			return
		}
		for _, q := range file.Queues {
			if err := queue.ValidateQueueName(q.Name); err != nil {
				t.Errorf("queue %q accepted: %v", q.Name, err)
			}
			if q.UnitsLeft != nil && (*q.UnitsLeft < 0 || *q.UnitsLeft > 1_000_000_000) {
				t.Errorf("queue %q accepted with unitsLeft %d", q.Name, *q.UnitsLeft)
			}
			if err := q.Config.Validate(); err != nil {
				t.Errorf("queue %q accepted with %v", q.Name, err)
			}
		}
	})
}

// settingValue is a setting's value as the admin API shows it.
func settingValue(name string, c queue.Config) any {
	s, _ := queue.SettingNamed(name)
	return s.Value(c)
}

// The README's part on the file says what the file is and points to the
// settings' table (docs/operations.md, generated from queue.Settings)
// rather than listing the settings again.
func TestREADMEDescribesTheFile(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"### Queues as a file", "`queues`", "`prune`", "SIGHUP", "deploy/queues.yaml", "docs/operations.md#per-queue-settings"} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("README.md does not say %s", key)
		}
	}
}
