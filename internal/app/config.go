package app

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/bypass"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/degraded"
	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/journal"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/queue/admission"
	"github.com/waitroom/waitroom/internal/queue/rollup"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/web"
	"github.com/waitroom/waitroom/internal/webhook"
)

// Config is every setting of `waitroom serve`. Each has a flag and a
// WAITROOM_* environment twin (flag wins); defaults are in Flags.
type Config struct {
	Addr      string
	RedisURL  string // empty: the in-process store
	RedisMode string // single, cluster or sentinel
	KeyPrefix string
	// RedisStrictEviction refuses a Redis whose maxmemory-policy may evict
	// waitroom's keys, or cannot be read (at start and in /readyz); without
	// it, such a Redis is reported loudly and used.
	RedisStrictEviction bool
	DatabaseURL         string // empty: SQLite in DataDir
	DataDir             string
	// OnStoreError is what a protected request gets while its queue's
	// store does not answer (degraded.Mode): wait (503 + Retry-After) or
	// admit (through, marked degraded).
	OnStoreError string
	// EmbeddedFsync is when the embedded line's journal in DataDir is
	// synced to disk (journal.Policy: always, everysec, no).
	EmbeddedFsync string
	AuthSecret    string // empty: random per start
	// AuthAudience and AuthIssuer, when set, are required of a user JWT's
	// aud and iss.
	AuthAudience, AuthIssuer string
	AdminToken               string // empty: kept in DataDir on the embedded default, else admin disabled

	// Queue is the config of the default queue and of new queues, one
	// flag per setting that has one (queue.Setting.Flag). Its
	// RatePerSecond 0 is derived from the pool settings below, and its
	// MaxRate 0 is the most a tick admits (BatchSize per Interval):
	// QueueConfig works them out.
	Queue queue.Config
	// QueuesFile is a YAML file naming queues and their settings
	// (package queuefile), applied at start and on SIGHUP; empty: none.
	QueuesFile string
	// PageDir is the operator's waiting page: templates and assets
	// (docs/page.md); empty: the built-in page.
	PageDir string
	// AdmissionJitter: the admission loop's random delay after each due tick
	// (default true; off only for the herd benchmark in bench/).
	AdmissionJitter bool
	// StatusSnapshotAge: how old a snapshot of a line may be when it answers
	// a status poll far from the front without Redis (0: every poll asks).
	StatusSnapshotAge time.Duration
	// HistoryInterval: how often each queue is sampled for the admin chart.
	HistoryInterval time.Duration
	DBPoolSize      int
	OrderPoolShare  float64
	OrderLatency    time.Duration

	OrderWork          time.Duration
	PaymentFailureRate float64
	PaymentLatency     time.Duration

	// MetricsAddr, when set, serves /metrics there (a private network)
	// instead of on Addr; Pprof adds /debug/pprof/ to it.
	MetricsAddr string
	Pprof       bool

	LogFormat       string
	LogLevel        string
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	SecureCookies   bool

	// SessionMaxAge is how long an anonymous session lasts.
	SessionMaxAge time.Duration
	// TrustedProxies are the CIDRs whose X-Forwarded-For is believed.
	TrustedProxies string
	// BotScoreHeader names the header in which the edge (a trusted proxy)
	// gives its bot score, 1–99 as Cloudflare's (--bot-score-header; empty:
	// none is read), and a score below BotScoreBelow (default 30) marks a
	// suspect. In gateway mode a client's own copy never reaches the
	// backend.
	BotScoreHeader string
	BotScoreBelow  int
	// Bypass are the rules that let staff and monitors past the line
	// (package bypass): "cidr 10.0.0.0/8", "header X-Staff-Key=@/path",
	// each optionally followed by "queue=NAME".
	Bypass []string
	// SuspectRanges are files of suspect address ranges (package suspect:
	// CIDRs, or a cloud's published list), read again on SIGHUP.
	SuspectRanges []string
	// SuspectPollFactor: a session that polled its instance on average more
	// than this many times faster than it was told to, over a minute and
	// at least eight polls, is a suspect for the places it takes next
	// (--suspect-poll-factor; 0, the default, watches no one: an API
	// client of the shop's own may poll as it likes until the operator
	// says otherwise).
	SuspectPollFactor float64
	// Per client address: anonymous entries and new sessions (token
	// buckets; a rate of 0 lifts the limit).
	AddressEntryBurst   int
	AddressEntryRate    float64
	AddressSessionBurst int
	AddressSessionRate  float64

	// Gateway mode (`waitroom proxy`): the line in front of any backend.
	Proxy          bool     // set by ParseProxy
	Upstream       string   // the backend's URL
	Protect        []string // --protect: token spent on a 2xx
	ProtectSession []string // --protect-session: token needed, kept
	// ProtectCaseSensitive compares paths with the patterns as written
	// (by default without case, as many backends route).
	ProtectCaseSensitive bool
	// Hosts is "shared" (a pattern's host is ignored: its path is
	// protected on every host) or "distinct" (the backend serves the
	// patterns' hosts apart).
	Hosts string
	// MethodOverride lists the method overrides the backend honours
	// (gateway.Reading.MethodOverrides); PathAllow the loosenings of the
	// gateway's path checks.
	MethodOverride  []string
	PathAllow       []string
	Prefix          string // where waitroom's own routes live
	UpstreamTimeout time.Duration
	// EntrySigningKey is a PEM file of Ed25519 keys for X-Waitroom-Entry
	// (empty: one kept in DataDir on the embedded default, else a random
	// one per start).
	EntrySigningKey string
	// EntryIssuer and EntryAudience are X-Waitroom-Entry's iss and aud
	// (empty: the prefix, and the upstream's URL).
	EntryIssuer, EntryAudience string

	// Webhooks receive every queue's events (package events; a queue's
	// own are in the queues file); WebhookSecretFile holds the key that
	// signs them, required with any; WebhookRetryFor is how long an event
	// is retried before it is dropped.
	Webhooks          []string
	WebhookSecretFile string
	WebhookRetryFor   time.Duration

	// RollupRetention is how long each queue's per-minute rows (package
	// rollup: the sale's report) are kept.
	RollupRetention time.Duration

	// DrawBeacon is a drand chain's HTTP base URL (URL/info,
	// URL/public/{round}): each new commitment to an opening names that
	// beacon's first round a full period or more after it, and the order depends on its
	// randomness (docs/operations.md, "A draw anyone can check"); empty,
	// the default: no beacon.
	DrawBeacon string

	// HumanCheckSecretFile and HumanCheckSiteKey are the human-check
	// provider's keys (entry policy turnstile; none: such a queue answers
	// 503 here), HumanCheckVerifyURL its siteverify and HumanCheckScriptURL
	// its widget's script (humancheck.go).
	HumanCheckSecretFile, HumanCheckSiteKey  string
	HumanCheckVerifyURL, HumanCheckScriptURL string

	// AdminOIDC is the admin page's sign-in through the shop's identity
	// provider (issue 56; staff_sso.go).
	AdminOIDC AdminOIDC
}

// DefaultDataDir is --data-dir's default.
const DefaultDataDir = "./waitroom-data"

// Flags registers every setting on fs, with its default and help text.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", ":8080", "listen address")
	fs.StringVar(&c.RedisURL, "redis-url", "", "Redis URL (redis://host:port/db); empty runs the line in process (one instance only)")
	fs.StringVar(&c.RedisMode, "redis-mode", RedisSingle, "how --redis-url is read: single (one server), cluster (Redis Cluster; seed nodes as host plus addr= parameters) or sentinel (sentinels as host plus addr= parameters, master_name= the primary)")
	fs.StringVar(&c.KeyPrefix, "redis-prefix", "wr:", "prefix of every Redis key")
	fs.BoolVar(&c.RedisStrictEviction, "redis-strict-eviction", false, "refuse to start, and fail /readyz, when Redis's maxmemory-policy may evict waitroom's keys (allkeys-*) or cannot be read; without it that is logged and shown in /readyz")
	fs.StringVar(&c.OnStoreError, "on-store-error", string(degraded.Wait), "what protected requests get while the line's store does not answer for their queue (a breaker opened by the first failure answers them at once, and probes the store once a second): wait (503 + Retry-After: the line's promise kept, the shop's protected routes down) or admit (the shop stays up, fairness and the rate given up for the outage: the gateway forwards protected requests without an entry, marked X-Waitroom-Degraded: store-unavailable; the API answers enter and status READY with degraded: true and a token the order API takes only while it runs with admit and finds the store away)")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "PostgreSQL URL; empty uses a SQLite file in --data-dir")
	fs.StringVar(&c.DataDir, "data-dir", DefaultDataDir, "directory of the SQLite file and, on the embedded default, of the line (its journal and snapshot, in line/), and of the auth secret and admin token kept when none is given")
	fs.StringVar(&c.EmbeddedFsync, "embedded-fsync", string(journal.EverySec), "when the embedded line's journal is synced to disk, as Redis's appendfsync: always (before each change is answered: a power cut loses nothing answered), everysec (once a second: a killed process loses nothing, a machine that crashes about the last second) or no (the kernel's choice, about 30 s at worst)")
	fs.StringVar(&c.AuthSecret, "auth-secret", "", "HS256 secret for user JWTs and session cookies; empty: random per start (set it when running several instances)")
	fs.StringVar(&c.AuthAudience, "auth-audience", "", "when set, a user JWT must name it in aud (the shop's login issues tokens for several services); empty: aud is not checked")
	fs.StringVar(&c.AuthIssuer, "auth-issuer", "", "when set, a user JWT's iss must be it (the shop's login); empty: iss is not checked")
	fs.StringVar(&c.AdminToken, "admin-token", "", "bearer token for /admin; empty: on the embedded default one kept in --data-dir (made at the first start) and printed, admin disabled otherwise")
	c.queueFlags(fs)
	fs.StringVar(&c.QueuesFile, "queues", "", "a YAML file naming queues and their settings (the admin API's, by the same names; deploy/queues.yaml is an example): at start, and again on SIGHUP, each queue it names is created or set to match it, settings left out taking the defaults for new queues; queues it does not name are left alone unless it says prune: true; a file that cannot work stops the start (on SIGHUP: is logged and changes nothing), naming the file, the line and the setting; empty: none")
	fs.StringVar(&c.PageDir, "page-dir", "", "the shop's own waiting page: a directory with waiting.html (a Go html/template placing waitroom's blocks), optional queues/{queue}/waiting.html per queue and assets/ served at /assets/custom/ (docs/page.md); every template is checked at start; empty: the built-in page")
	fs.BoolVar(&c.AdmissionJitter, "admission-jitter", true, "delay each admission tick by a random part of half an interval (false only to reproduce the unjittered schedule, as the herd benchmark does)")
	fs.DurationVar(&c.StatusSnapshotAge, "status-snapshot-age", 100*time.Millisecond, "answer status polls far from the front from a snapshot of the line at most this old, without a Redis round trip per poll (changes made through other instances show within it); 0 asks the store on every poll")
	fs.DurationVar(&c.HistoryInterval, "history-interval", 5*time.Second, "how often each queue's length is sampled for the admin page's chart (the last 10 minutes are kept, so the chart has them the moment the page opens)")
	fs.IntVar(&c.DBPoolSize, "db-pool-size", 40, "database connection pool size (PostgreSQL); also the base of the derived rate")
	fs.Float64Var(&c.OrderPoolShare, "order-pool-share", 0.5, "share of the pool the order API may use")
	fs.DurationVar(&c.OrderLatency, "order-latency", 200*time.Millisecond, "time one order holds a connection, for the derived rate")
	fs.DurationVar(&c.OrderWork, "order-work", 0, "extra database time each order spends holding its connection (pg_sleep), to reproduce slow orders")
	fs.Float64Var(&c.PaymentFailureRate, "payment-failure-rate", 0, "share of payments the built-in fake payment fails (0..1)")
	fs.DurationVar(&c.PaymentLatency, "payment-latency", 0, "time the built-in fake payment takes")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics on this address (e.g. a private network's 10.0.0.5:9090) instead of on --addr; empty: on --addr")
	fs.BoolVar(&c.Pprof, "pprof", false, "also serve Go's profiler (/debug/pprof/) on --metrics-addr (required with it)")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 5*time.Second, "on SIGTERM, how long to keep serving with /readyz failing so load balancers stop sending traffic (0 on the embedded default unless set)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long in-flight requests get to finish on SIGTERM, after the drain delay")
	fs.BoolVar(&c.SecureCookies, "secure-cookies", false, "mark every cookie waitroom sets Secure (TLS ends in front); without it they are Secure when the request came over TLS or a --trusted-proxies proxy says X-Forwarded-Proto: https")
	fs.DurationVar(&c.SessionMaxAge, "session-max-age", identity.DefaultSessionMaxAge, "how long an anonymous session cookie is good for after it was issued; an older one is refused (401)")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", "", "CIDRs or addresses of the proxies in front (load balancer, nginx), comma-separated: only from them is X-Forwarded-For believed when telling a client's address, and X-Forwarded-Proto when marking cookies Secure; in gateway mode only their forwarding headers reach the backend; empty: the connection's address is the client's")
	fs.Var(&listFlag{vals: &c.Bypass}, "bypass", "let staff and monitors past the line: 'cidr 10.0.0.0/8' (the client's address as --trusted-proxies tells it) or 'header X-Staff-Key=VALUE' (at least 16 bytes, compared in constant time; VALUE may be @/path, a file whose trailing newline is dropped), optionally followed by ' queue=NAME' (repeatable; ';' separates several in one value). A bypassed request reaches a protected route without a token (proxy) or is READY at once (the API), takes no share of the admission rate or of maxActiveTokens, and is counted in waitroom_bypassed_total{rule}; the gateway strips the header before the upstream sees it")
	fs.Var(&listFlag{vals: &c.Webhooks, separators: ",;"}, "webhook", "a URL that receives every queue's events as signed POSTs of JSON (a queue opened, closed, paused, resumed, sold out, restocked, its rate changed, a phase of its sale began, a store breaker opened or closed: docs/operations.md#webhooks); repeatable, ',' or ';' separates several in one value (a comma inside a URL: %2C); a queue's own receivers are its webhooks in --queues")
	fs.StringVar(&c.WebhookSecretFile, "webhook-secret-file", "", "a file holding the secret that signs every webhook (Waitroom-Signature: HMAC-SHA256 over the timestamp and the body), at least 16 bytes, its trailing newline dropped; required with --webhook or a queue's webhooks; give every instance the same")
	fs.StringVar(&c.DrawBeacon, "draw-beacon", "", "a drand chain's HTTP base URL (URL/info, URL/public/{round}): each new commitment to an opening's draw names the chain's first round a full period or more after the opening, and the opening waits for that round, whose randomness the order then depends on, so that not even the shop can aim a place (docs/operations.md, A draw anyone can check); empty: no beacon")
	fs.DurationVar(&c.RollupRetention, "rollup-retention", rollup.DefaultKeep, "how long each queue's per-minute rows are kept in the store (the sale's report: waitroom report, GET /admin/v1/queues/{queue}/rollups); about 1.5 MB a busy queue a day on Redis, nothing for one whose numbers stand still (docs/operations.md)")
	fs.DurationVar(&c.WebhookRetryFor, "webhook-retry-for", webhook.DefaultRetryFor, "how long an event is retried, with exponential backoff and jitter, while its receiver fails (no answer within 10 s, or not a 2xx); then it is dropped and counted (waitroom_webhook_deliveries_total{result=\"expired\"})")
	fs.StringVar(&c.BotScoreHeader, "bot-score-header", "", "the header in which a --trusted-proxies proxy (the edge: Cloudflare's Cf-Bot-Score, Akamai, DataDome, Fastly) sends its bot score of the client, 1 (surely a bot) to 99 (surely human); a place taken with a score below --bot-score-below is a suspect's, handled by the queue's suspects setting; a client's own copy, or a request from anyone else, is never believed, and a trusted request without it is unknown, not human; empty: no score is read")
	fs.IntVar(&c.BotScoreBelow, "bot-score-below", 30, "a --bot-score-header score below this (1..99) marks a suspect")
	fs.Float64Var(&c.SuspectPollFactor, "suspect-poll-factor", 0, "a session that polled its instance on average more than this many times faster than its pollAfterSeconds, over a minute and at least eight polls, is a suspect for the places it takes next, handled by the queue's suspects setting (3 is a margin no page reaches); 0: sessions' polling marks no one")
	fs.Var(&listFlag{vals: &c.SuspectRanges}, "suspect-ranges", "a file of suspect address ranges (data centres, clouds): CIDRs one a line with # comments, or AWS's ip-ranges.json, Google's cloud.json, Azure's service tags; a place taken from an address in one is a suspect's, handled by the queue's suspects setting; SIGHUP reads the files again (a bad file is logged and the old ranges kept), dropping nobody's place; repeatable, ';' separates several in one value")
	fs.IntVar(&c.AddressEntryBurst, "address-entry-burst", 100, "places anonymous sessions may take from one client address in a row (IPv6: one /64); signed-in users are not limited per address")
	fs.Float64Var(&c.AddressEntryRate, "address-entry-rate", 1, "places per second anonymous sessions may take from one client address once the burst is spent; 0 lifts the limit")
	fs.IntVar(&c.AddressSessionBurst, "address-session-burst", 100, "anonymous sessions handed out to one client address in a row")
	fs.Float64Var(&c.AddressSessionRate, "address-session-rate", 1, "anonymous sessions per second handed out to one client address once the burst is spent; 0 lifts the limit")
	c.humanCheckFlags(fs)
	c.adminSignInFlags(fs)
}

// derivedWhenZero says what 0 means on the command line for the per-queue
// settings whose 0 is worked out from others (QueueConfig).
var derivedWhenZero = map[string]string{
	"ratePerSecond":    "0 derives it from --db-pool-size × --order-pool-share × 1s/--order-latency.",
	"maxRatePerSecond": "0: the most a tick admits, --batch per --interval.",
}

// queueFlags registers a flag for each per-queue setting that has one: its
// name, kind, default and help come from queue.Settings, and it sets the
// default queue's and new queues' config.
func (c *Config) queueFlags(fs *flag.FlagSet) {
	c.Queue = queue.DefaultConfig()
	for _, s := range queue.Settings {
		if s.Flag == "" {
			continue
		}
		kind := map[queue.Kind]string{queue.Number: "a `number`", queue.Integer: "an `integer`",
			queue.Duration: "a `duration` (100ms, 5m)", queue.Choice: "one of " + strings.Join(s.Choices, ", ")}[s.Kind]
		usage := fmt.Sprintf("%s For the default queue and new queues: the admin API's %s", web.SettingHelp(s.Name), s.Name)
		if kind != "" {
			usage += ", here " + kind
		}
		usage += "."
		if zero, ok := derivedWhenZero[s.Name]; ok {
			usage += " " + zero
			s.Parse(&c.Queue, "0")
		}
		fs.Var(queueFlag{s, &c.Queue}, s.Flag, usage)
	}
}

// queueFlag is the flag.Value of a per-queue setting.
type queueFlag struct {
	s   queue.Setting
	cfg *queue.Config
}

// String is the value as the flag takes it, "" for the zero of its kind
// (--help shows no default then, as for Go's own flags).
func (f queueFlag) String() string {
	if f.cfg == nil {
		return ""
	}
	v := f.s.Format(*f.cfg)
	if v == "0" || v == "0s" || v == "false" {
		return ""
	}
	return v
}

func (f queueFlag) Set(v string) error { return f.s.Parse(f.cfg, v) }

// IsBoolFlag lets a boolean setting's flag stand alone (--adaptive).
func (f queueFlag) IsBoolFlag() bool { return f.s.Kind == queue.Bool }

// minSecretLen is the shortest --auth-secret and --admin-token a server on
// Redis accepts: 32 bytes, the strength of the HMAC-SHA-256 they key.
const minSecretLen = 32

// GatewayFlags registers the settings `waitroom proxy` adds to serve's.
func (c *Config) GatewayFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Upstream, "upstream", "", "the backend to put the line in front of: an http:// or https:// URL (required)")
	fs.Var(&listFlag{vals: &c.Protect}, "protect", "a route whose use spends an entry token when the upstream answers 2xx: 'METHOD /pattern' in Go ServeMux syntax, optionally followed by ' queue=NAME' (repeatable; ';' separates several in one value)")
	fs.Var(&listFlag{vals: &c.ProtectSession}, "protect-session", "a route that needs a valid entry token but keeps it, for the pages of a multi-step checkout; same syntax as --protect (repeatable)")
	fs.BoolVar(&c.ProtectCaseSensitive, "protect-case-sensitive", false, "compare request paths with the --protect and --protect-session patterns as written; by default case is ignored (/CHECKOUT is /checkout), since Express, ASP.NET Core and others route without case: set it only for a backend known to compare case")
	fs.StringVar(&c.Hosts, "hosts", "shared", "how the backend treats the hosts --protect patterns name: shared (default: a pattern's host is ignored and its path protected on every host, as Jetty, Flask and Express serve any Host) or distinct (the backend really serves those hosts as separate sites: a pattern applies to its host and to hosts no pattern names)")
	fs.Var(&listFlag{vals: &c.MethodOverride}, "method-override", "the method overrides the backend honours: X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override, _method (the query field), or none (no override, a body's included); those not named are removed before forwarding, and a POST with a body to a protected path is protected whatever method its route names unless none is given (repeatable; ',' or ';' separates several)")
	fs.Var(&listFlag{vals: &c.PathAllow}, "path-allow", "let a path form the gateway refuses stand under a prefix: 'encoded-slash /files/' (%2F, %5C, a backslash), 'encoded-percent /search/' (%25), 'path-params /shop/' (';' where a protected route may match); the gateway then protects the path if any reading of it is protected (repeatable)")
	fs.StringVar(&c.Prefix, "prefix", gateway.DefaultPrefix, "path under which waitroom serves its own API, pages, admin, metrics and probes")
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", 30*time.Second, "how long to wait for the upstream's response headers; beyond it 504, and the entry token is kept")
	fs.StringVar(&c.EntryIssuer, "entry-issuer", "", "X-Waitroom-Entry's iss, which backends check: the gateway's public URL, e.g. https://shop.example.com/_waitroom (the embedded default's start banner then names the shop by it); empty: --prefix")
	fs.StringVar(&c.EntryAudience, "entry-audience", "", "X-Waitroom-Entry's aud, which backends check: the backend's name; empty: --upstream as given")
	fs.StringVar(&c.EntrySigningKey, "entry-signing-key", "", "PEM file of Ed25519 keys signing X-Waitroom-Entry: the first PRIVATE KEY signs, every key is published at {prefix}/.well-known/jwks.json (give every instance the same file); empty: kept in --data-dir on the embedded default, random per start otherwise")
}

// listFlag is a repeatable flag. Its environment twin sets the whole list
// and the command line, if it names the flag, replaces it (flags win).
type listFlag struct {
	vals *[]string
	// separators split one value into several (";" when empty).
	separators string
	// fromCommandLine: a value from the command line has replaced the
	// environment's.
	fromCommandLine bool
	parsingEnv      bool
}

func (l *listFlag) String() string {
	if l.vals == nil {
		return ""
	}
	return strings.Join(*l.vals, "; ")
}

func (l *listFlag) Set(v string) error {
	if !l.parsingEnv && !l.fromCommandLine {
		*l.vals, l.fromCommandLine = nil, true
	}
	seps := cmp.Or(l.separators, ";")
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if part = strings.TrimSpace(part); part != "" {
			*l.vals = append(*l.vals, part)
		}
	}
	return nil
}

// Parse reads the settings of `waitroom serve`: WAITROOM_* env vars, then
// the command line over them, then validates. Any bad value is an error
// naming the setting.
func Parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	return parse("serve", args, getenv, stderr)
}

// ParseProxy reads the settings of `waitroom proxy`: every serve setting
// and the gateway's (GatewayFlags).
func ParseProxy(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	return parse("proxy", args, getenv, stderr)
}

func parse(command string, args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := Config{Proxy: command == "proxy"}
	fs := flag.NewFlagSet("waitroom "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.Flags(fs)
	if c.Proxy {
		c.GatewayFlags(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: waitroom %s [flags]\n\nEvery flag has an environment twin: --redis-url ↔ WAITROOM_REDIS_URL. Flags win.\n\n", command)
		fs.PrintDefaults()
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		if v := getenv(name); v != "" && envErr == nil {
			l, list := f.Value.(*listFlag)
			if list {
				l.parsingEnv = true
			}
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %v", name, v, err)
			}
			if list {
				l.parsingEnv = false
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	// A single in-process instance has no load balancer to wait for.
	drainSet := getenv(EnvName("drain-delay")) != ""
	fs.Visit(func(f *flag.Flag) { drainSet = drainSet || f.Name == "drain-delay" })
	if c.Embedded() && !drainSet {
		c.DrainDelay = 0
	}
	return c, c.Validate()
}

// EnvName is the environment twin of a flag: redis-url → WAITROOM_REDIS_URL.
func EnvName(flagName string) string {
	return "WAITROOM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Validate reports every setting that cannot work, each by its flag name.
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: "+format, append([]any{name}, args...)...))
	}
	c.validateServer(bad)
	c.validateOrders(bad)
	c.validateClients(bad)
	c.validateSuspects(bad)
	c.validateWebhooks(bad)
	c.validateHumanCheck(bad)
	c.validateAdminSignIn(bad)
	if c.Proxy {
		errs = append(errs, c.validateGateway()...)
	}
	if len(errs) == 0 {
		if _, err := c.QueueConfig(); err != nil {
			var flags []string
			for _, s := range queue.Settings {
				if s.Flag != "" {
					flags = append(flags, "--"+s.Flag)
				}
			}
			errs = append(errs, fmt.Errorf("the queue settings from %s: %v", strings.Join(flags, ", "), err))
		}
	}
	return errors.Join(errs...)
}

// badSetting reports one setting that cannot work, by its flag name.
type badSetting func(name, format string, args ...any)

// validateServer checks the server's own settings: where it listens and
// stores, how it logs and stops, the secrets.
func (c Config) validateServer(bad badSetting) {
	if c.Addr == "" {
		bad("addr", "must not be empty")
	}
	if c.Pprof && c.MetricsAddr == "" {
		bad("pprof", "needs --metrics-addr: the profiler is never served on the public --addr")
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		bad("log-format", "must be json or text, got %q", c.LogFormat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.DrainDelay < 0 || c.DrainDelay > 5*time.Minute {
		bad("drain-delay", "must be 0..5m, got %v", c.DrainDelay)
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown-timeout", "must be > 0")
	}
	if _, err := journal.ParsePolicy(c.EmbeddedFsync); err != nil {
		bad("embedded-fsync", "%v", err)
	}
	if _, err := degraded.ParseMode(c.OnStoreError); err != nil {
		bad("on-store-error", "%v", err)
	}
	if m := c.RedisMode; m != RedisSingle && m != RedisCluster && m != RedisSentinel {
		bad("redis-mode", "must be %s, %s or %s, got %q", RedisSingle, RedisCluster, RedisSentinel, m)
	}
	if c.HistoryInterval < 100*time.Millisecond || c.HistoryInterval > time.Minute {
		bad("history-interval", "must be 100ms..1m, got %v", c.HistoryInterval)
	}
	if c.StatusSnapshotAge < 0 || c.StatusSnapshotAge > 10*time.Second {
		bad("status-snapshot-age", "must be 0..10s, got %v", c.StatusSnapshotAge)
	}
	if !c.Embedded() {
		// The embedded default serves one developer; on real servers a
		// short secret signs sessions, JWTs and challenges anyone could
		// guess offline.
		for _, s := range []struct{ name, value string }{{"auth-secret", c.AuthSecret}, {"admin-token", c.AdminToken}} {
			if s.value != "" && len(s.value) < minSecretLen {
				bad(s.name, "must be at least %d bytes on Redis, got %d (e.g. openssl rand -hex 32)", minSecretLen, len(s.value))
			}
		}
	}
}

// validateOrders checks the order API's settings and the pool the rate
// may be derived from.
func (c Config) validateOrders(bad badSetting) {
	if c.Queue.RatePerSecond < 0 {
		bad("rate", "must be ≥ 0, got %v", c.Queue.RatePerSecond)
	}
	if c.DBPoolSize < 1 || c.DBPoolSize > 10_000 {
		bad("db-pool-size", "must be 1..10000, got %d", c.DBPoolSize)
	}
	if !(c.OrderPoolShare > 0 && c.OrderPoolShare <= 1) {
		bad("order-pool-share", "must be in (0, 1], got %v", c.OrderPoolShare)
	}
	if c.OrderLatency <= 0 {
		bad("order-latency", "must be > 0, got %v", c.OrderLatency)
	}
	if c.OrderWork < 0 || c.OrderWork > time.Minute {
		bad("order-work", "must be 0..1m, got %v", c.OrderWork)
	}
	if c.PaymentFailureRate < 0 || c.PaymentFailureRate > 1 {
		bad("payment-failure-rate", "must be 0..1, got %v", c.PaymentFailureRate)
	}
	if c.PaymentLatency < 0 {
		bad("payment-latency", "must be ≥ 0, got %v", c.PaymentLatency)
	}
}

// validateClients checks what is told of clients: sessions, the proxies in
// front, the per-address limits.
func (c Config) validateClients(bad badSetting) {
	if c.SessionMaxAge < time.Minute || c.SessionMaxAge > 30*24*time.Hour {
		bad("session-max-age", "must be 1m..720h, got %v", c.SessionMaxAge)
	}
	if _, err := clientaddr.Parse(c.TrustedProxies); err != nil {
		bad("trusted-proxies", "%v", err)
	} else if _, err := c.BypassRules(); err != nil {
		bad("bypass", "%v", err)
	}
	for _, l := range []struct {
		name  string
		burst int
		rate  float64
	}{{"address-entry", c.AddressEntryBurst, c.AddressEntryRate}, {"address-session", c.AddressSessionBurst, c.AddressSessionRate}} {
		if l.burst < 1 || l.burst > 1_000_000 {
			bad(l.name+"-burst", "must be 1..1000000, got %d", l.burst)
		}
		if l.rate < 0 || l.rate > 1_000_000 || math.IsNaN(l.rate) {
			bad(l.name+"-rate", "must be 0 (no limit)..1000000, got %v", l.rate)
		}
	}
}

// validateSuspects checks the signals that mark likely bots: the edge's
// score is believed only from the trusted proxies, so it needs them; each
// ranges file must read.
func (c Config) validateSuspects(bad badSetting) {
	if c.BotScoreHeader != "" {
		if strings.ContainsAny(c.BotScoreHeader, " \t\r\n:") {
			bad("bot-score-header", "must be a header name, got %q", c.BotScoreHeader)
		}
		if c.TrustedProxies == "" {
			bad("bot-score-header", "needs --trusted-proxies: the score is believed only from them")
		}
	}
	if c.BotScoreBelow < 1 || c.BotScoreBelow > 99 {
		bad("bot-score-below", "must be 1..99, got %d", c.BotScoreBelow)
	}
	if c.SuspectPollFactor != 0 && c.SuspectPollFactor < 1.5 {
		bad("suspect-poll-factor", "must be 0 (off) or at least 1.5, got %v: a page polling as told, with its retries, must never look fast", c.SuspectPollFactor)
	}
	if len(c.SuspectRanges) > 0 {
		if _, err := suspect.NewRanges(c.SuspectRanges); err != nil {
			bad("suspect-ranges", "%v", err)
		}
	}
}

// minWebhookSecretLen is the shortest webhook secret: 16 bytes, 128 bits
// of a key nobody must guess.
const minWebhookSecretLen = 16

// validateWebhooks checks the receivers and, with any, the secret.
func (c Config) validateWebhooks(bad badSetting) {
	for _, u := range c.Webhooks {
		if err := webhook.ValidURL(u); err != nil {
			bad("webhook", "%v", err)
		}
	}
	switch {
	case c.WebhookSecretFile != "":
		if _, err := c.WebhookSecret(); err != nil {
			bad("webhook-secret-file", "%v", err)
		}
	case len(c.Webhooks) > 0:
		bad("webhook-secret-file", "%v", errNoWebhookSecret)
	}
	if c.WebhookRetryFor < time.Minute || c.WebhookRetryFor > 72*time.Hour {
		bad("webhook-retry-for", "must be 1m..72h, got %v", c.WebhookRetryFor)
	}
	if c.RollupRetention < time.Minute || c.RollupRetention > 366*24*time.Hour {
		bad("rollup-retention", "must be 1m..8784h (a year), got %v", c.RollupRetention)
	}
	if c.DrawBeacon != "" {
		if u, err := url.Parse(c.DrawBeacon); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("draw-beacon", "must be an http:// or https:// URL (a drand chain's base), got %q", c.DrawBeacon)
		}
	}
}

// errNoWebhookSecret: a receiver named without --webhook-secret-file.
var errNoWebhookSecret = errors.New("required with a webhook (--webhook, or a queue's webhooks in --queues): " +
	"the secret receivers check each event's signature with (e.g. openssl rand -hex 32 > FILE)")

// WebhookSecret reads --webhook-secret-file: the key that signs every
// webhook, without its trailing newline.
func (c Config) WebhookSecret() ([]byte, error) {
	raw, err := os.ReadFile(c.WebhookSecretFile)
	if err != nil {
		return nil, err
	}
	secret := bytes.TrimRight(raw, "\r\n")
	if len(secret) < minWebhookSecretLen {
		return nil, fmt.Errorf("%s holds %d bytes, want at least %d (e.g. openssl rand -hex 32 > FILE)",
			c.WebhookSecretFile, len(secret), minWebhookSecretLen)
	}
	return secret, nil
}

// validateGateway checks the settings of `waitroom proxy`, each by its flag.
func (c Config) validateGateway() []error {
	var errs []error
	if _, err := c.UpstreamURL(); err != nil {
		errs = append(errs, fmt.Errorf("--upstream: %v", err))
	}
	if _, err := c.Routes(); err != nil {
		errs = append(errs, err)
	}
	if err := gateway.ValidPrefix(c.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("--prefix %q: %v", c.Prefix, err))
	}
	if c.UpstreamTimeout <= 0 || c.UpstreamTimeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("--upstream-timeout: must be > 0 and ≤ 10m, got %v", c.UpstreamTimeout))
	}
	if c.EntrySigningKey != "" {
		if _, err := c.Signer(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// UpstreamURL is --upstream, parsed and checked.
func (c Config) UpstreamURL() (*url.URL, error) {
	if c.Upstream == "" {
		return nil, gateway.ValidUpstream(nil)
	}
	u, err := url.Parse(c.Upstream)
	if err != nil {
		return nil, err
	}
	return u, gateway.ValidUpstream(u)
}

// Routes are --protect and --protect-session, parsed and checked together.
func (c Config) Routes() ([]gateway.Route, error) {
	var rs []gateway.Route
	for _, l := range []struct {
		flag    string
		vals    []string
		consume bool
	}{{"--protect", c.Protect, true}, {"--protect-session", c.ProtectSession, false}} {
		for _, v := range l.vals {
			r, err := gateway.ParseRoute(v, l.consume)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", l.flag, err)
			}
			rs = append(rs, r)
		}
	}
	rd, err := c.Reading()
	if err != nil {
		return nil, err
	}
	if err := gateway.CheckRoutes(rs, c.Prefix, rd); err != nil {
		return nil, fmt.Errorf("--protect/--protect-session: %v", err)
	}
	return rs, nil
}

// Reading is how the backend reads requests: --protect-case-sensitive,
// --hosts, --method-override, --path-allow.
func (c Config) Reading() (gateway.Reading, error) {
	rd := gateway.Reading{CaseSensitive: c.ProtectCaseSensitive, PathAllow: c.PathAllow}
	switch c.Hosts {
	case "", "shared":
	case "distinct":
		rd.DistinctHosts = true
	default:
		return rd, fmt.Errorf("--hosts %q: want shared or distinct", c.Hosts)
	}
	for _, v := range c.MethodOverride {
		for o := range strings.SplitSeq(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				rd.MethodOverrides = append(rd.MethodOverrides, o)
			}
		}
	}
	return rd, nil
}

// BypassRules are --bypass, parsed, their files read, with the client
// addresses --trusted-proxies tells.
func (c Config) BypassRules() (*bypass.Rules, error) {
	proxies, err := clientaddr.Parse(c.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("--trusted-proxies: %v", err)
	}
	return bypass.Parse(c.Bypass, proxies, os.ReadFile)
}

// Signer reads --entry-signing-key.
func (c Config) Signer() (*gateway.Signer, error) {
	raw, err := os.ReadFile(c.EntrySigningKey)
	if err != nil {
		return nil, fmt.Errorf("--entry-signing-key: %v", err)
	}
	s, err := gateway.ParseSigner(raw)
	if err != nil {
		return nil, fmt.Errorf("--entry-signing-key %s: %v", c.EntrySigningKey, err)
	}
	return s, nil
}

// QueueConfig is the config of the default queue and of new queues: the
// rate as set, or derived from the bottleneck.
func (c Config) QueueConfig() (queue.Config, error) {
	q := c.Queue
	q.RateDerivation = fmt.Sprintf("set directly: %g/s", q.RatePerSecond)
	if q.MaxRate == 0 && q.Interval > 0 {
		q.MaxRate = float64(q.BatchSize) / q.Interval.Seconds()
		// A slow tick (--batch 10 --interval 1m) derives a ceiling below
		// the floor of 1/s. With the adaptive rate off the bounds are not
		// used, so the floor comes down rather than refuse the start; with
		// it on, or bounds given both, Validate says which does not fit.
		if !q.Adaptive && q.MinRate > q.MaxRate {
			q.MinRate = q.MaxRate
		}
	}
	if q.RatePerSecond == 0 {
		rate, why, err := admission.RateFromPool(c.DBPoolSize, c.OrderPoolShare, c.OrderLatency)
		if err != nil {
			return q, err
		}
		q.RatePerSecond, q.RateDerivation = rate, why
	}
	return q, q.Validate()
}

// prefix is where the pages and the API live as browsers see them: under
// --prefix in gateway mode, at the root for serve.
func (c Config) prefix() string {
	if c.Proxy {
		return c.Prefix
	}
	return ""
}

// publicBase is the shop's public address as --entry-issuer names it, when
// it is the gateway's public URL as its help asks
// (https://shop.example.com/_waitroom): the URL without --prefix, ending
// in "/" (https://shop.example.com/). "" when it names no address: empty,
// not an absolute http(s) URL, or not ending in --prefix (an issuer name of
// the shop's own choosing).
func (c Config) publicBase() string {
	u, err := url.Parse(c.EntryIssuer)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return ""
	}
	path, ok := strings.CutSuffix(strings.TrimSuffix(u.Path, "/"), c.Prefix)
	if !ok {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path + "/"}).String()
}

// Embedded reports whether this is the zero-setup mode (no Redis).
func (c Config) Embedded() bool { return c.RedisURL == "" }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
