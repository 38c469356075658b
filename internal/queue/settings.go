package queue

import (
	"encoding/json"
	"fmt"
	"github.com/waitroom/waitroom/internal/queue/lane"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/staff"
	"github.com/waitroom/waitroom/internal/suspect"
)

// Config is one queue's settings. Every instance reads them from the store,
// so a change made through one instance applies everywhere at once. Each
// field is declared, with its name, range and default, in Settings.
type Config struct {
	// RatePerSecond is the global admission rate, all instances together;
	// with Adaptive, the rate the adaptive rate starts from.
	RatePerSecond float64
	// BatchSize caps how many users one tick admits (default 10).
	BatchSize int
	// Interval is the admission tick (default 100ms). Each tick admits
	// RatePerSecond×Interval users (fractions carry over), at most BatchSize.
	Interval time.Duration
	// Capacity caps the waiting users (default 100000); beyond it, ErrQueueFull.
	Capacity int64
	// TokenTTL is how long an entry token lives (default 5m).
	TokenTTL time.Duration
	// SessionMax, when not 0, makes entries sliding sessions: each
	// successful use of a token on a session route (Store.Extend) moves its
	// expiry to TokenTTL from then, never past SessionMax after it was
	// issued. At least TokenTTL.
	SessionMax time.Duration
	// MaxActiveTokens caps the tokens alive at once (0: no cap). Admission
	// lets in no more than the room under it, so people who hold a token
	// and order late can never add up to more concurrent orders than the
	// order API was sized for.
	MaxActiveTokens int64
	// AdmitPerUnit caps the tokens alive at once by what is left to sell:
	// at most Stock.Units × AdmitPerUnit (0: no cap; none while the stock
	// is not known). A live token stands for an order that may still come,
	// so at 1 nobody is let in to find nothing left.
	AdmitPerUnit float64
	// SoldOutPoll is how soon someone waiting in a sold-out queue is told
	// to ask again (±20%): nothing moves until a restock, which reaches
	// them within it. Longer costs a sold-out line of millions less.
	SoldOutPoll time.Duration
	// Paused stops admission; entering and status go on.
	Paused bool
	// Adaptive lets the admission rate follow what the backend is measured
	// to bear (admission.NextRate), never below MinRate nor above MaxRate;
	// while the protected calls' p90 is above TargetLatency it never grows.
	Adaptive         bool
	MinRate, MaxRate float64
	TargetLatency    time.Duration
	// AbandonAfter: a waiting user who has not asked for their status for
	// this long is skipped at admission instead of given a token (0: never).
	AbandonAfter time.Duration
	// AbandonAfterHidden is AbandonAfter for a place whose page last said
	// it was hidden (a background tab, a locked phone: the browser slows or
	// stops its polls). Only where AbandonAfter is on; below AbandonAfter
	// it counts as AbandonAfter, so that raising abandonAfterSeconds alone
	// never makes a hidden page wait less than a visible one.
	AbandonAfterHidden time.Duration
	// NotifyOnReady: each signed-in user let in is told to the shop as the
	// webhook event entry.ready, for it to reach them by its own channel.
	NotifyOnReady bool
	// NotifyLead: the page also tells its person this long before their
	// estimate says their turn comes (0: only when they are let in).
	NotifyLead time.Duration
	// OpensAt: users entering before it wait in a pre-queue and are placed
	// in the line in a uniformly random order at OpensAt (zero: no opening).
	OpensAt time.Time
	// ClosesAt: from then on nobody new takes a place; whoever is in line
	// or holds an entry keeps it (zero: never).
	ClosesAt time.Time
	// Method is how the line lets people in (default MethodFIFO).
	Method QueueingMethod
	// RateDerivation explains where RatePerSecond came from, for operators.
	RateDerivation string

	// Join says who may take a place (default JoinChallenge).
	Join JoinPolicy
	// ChallengeCost is the proof of work's difficulty under JoinChallenge:
	// PBKDF2 iterations per attempt (package challenge; challengeCost's Min in Settings).
	ChallengeCost int

	// Suspects is what becomes of a place taken by a client a signal marks
	// as a likely bot (issue 51; package suspect judges the signals):
	// default suspect.Shadow. HumanCheckSigned asks signed-in users, too,
	// to pass the human check under JoinTurnstile.
	Suspects suspect.Action
	// SuspectChallengeCost is the proof of work a suspect solves under
	// suspect.Challenge (0: ten times ChallengeCost, at most its maximum).
	SuspectChallengeCost int
	// ShadowAdmits says whether the shadow line is ever let in: never, or
	// last, once nobody waits in the real line. ShadowCapacity caps it,
	// apart from Capacity.
	ShadowAdmits     suspect.Admits
	ShadowCapacity   int64
	HumanCheckSigned bool

	// Message is the operator's word to the people in line (none: empty).
	Message Message

	// Lanes are the queue's lanes (issue 53; package lane): each crowd
	// with its own line and share of admission. None: one lane, the public.
	Lanes lane.List

	// Phases are the sale's steps, in the order they start, each changing
	// some of the settings above (the rows with Phased) while it lasts
	// (Phase, InForce).
	Phases []Phase
}

// JoinPolicy says who may take a place in a queue. Re-entering keeps a
// place and is never refused by the policy; it decides who may take a new
// one.
type JoinPolicy string

const (
	// JoinAny: anyone with an identity (a signed-in user's JWT or the
	// anonymous session cookie the page gets).
	JoinAny JoinPolicy = "any"
	// JoinChallenge: anonymous sessions solve a proof-of-work challenge
	// for each place (the page does it unseen); signed-in users do not.
	JoinChallenge JoinPolicy = "challenge"
	// JoinSigned: signed-in users only.
	JoinSigned JoinPolicy = "signed"
	// JoinTurnstile: anonymous sessions pass a human check from a provider
	// (Cloudflare Turnstile, or any speaking its siteverify protocol) for
	// each place; signed-in users too with HumanCheckSigned.
	JoinTurnstile JoinPolicy = "turnstile"
)

// QueueingMethod is how a queue lets people in (queueingMethod).
type QueueingMethod string

const (
	// MethodFIFO: in line, admitted in the order they came, at the rate.
	MethodFIFO QueueingMethod = "fifo"
	// MethodReject: nobody new takes a place, as after ClosesAt; whoever is
	// in line is admitted in order and whoever is READY stays so.
	MethodReject QueueingMethod = "reject"
	// MethodPassthrough: whoever enters is READY at once, outside the
	// admission rate, while MaxActiveTokens has room; over it they wait in
	// line and are admitted as in MethodFIFO.
	MethodPassthrough QueueingMethod = "passthrough"
	// MethodRandom: in line, and each tick draws the users it lets in
	// uniformly at random among everyone waiting (a lottery, not a race):
	// there is no position to tell, only the line's length and the
	// median wait of a draw (estimate.Of).
	MethodRandom QueueingMethod = "random"
)

// DefaultConfig is the seed's configuration: 100 users/s as 10 per 100 ms,
// and every other setting's default (Settings).
func DefaultConfig() Config { return defaultFromSettings() }

// Validate reports the first setting that cannot work, naming it: each
// setting's own range (Settings), then the rules between them.
func (c Config) Validate() error {
	for _, s := range Settings {
		if err := s.validate(c); err != nil {
			return err
		}
	}
	switch {
	case c.perTick() > float64(c.BatchSize):
		return fmt.Errorf("%w: ratePerSecond×intervalMs/1000 = %.1f users per tick exceeds batchSize %d; raise batchSize or shorten intervalMs",
			ErrInvalidConfig, c.perTick(), c.BatchSize)
	case !c.ClosesAt.IsZero() && !c.OpensAt.IsZero() && !c.ClosesAt.After(c.OpensAt):
		return fmt.Errorf("%w: closesAt %s is not after opensAt %s", ErrInvalidConfig,
			c.ClosesAt.Format(time.RFC3339), c.OpensAt.Format(time.RFC3339))
	case c.SessionMax != 0 && c.SessionMax < c.TokenTTL:
		return fmt.Errorf("%w: sessionMaxSeconds %d is below tokenTtlSeconds %d; raise it, or 0 for no sliding sessions",
			ErrInvalidConfig, int64(c.SessionMax/time.Second), int64(c.TokenTTL/time.Second))
	case c.MinRate > c.MaxRate:
		return fmt.Errorf("%w: minRatePerSecond %v is above maxRatePerSecond %v", ErrInvalidConfig, c.MinRate, c.MaxRate)
	case c.Adaptive && c.MaxRate*c.Interval.Seconds() > float64(c.BatchSize):
		return fmt.Errorf("%w: maxRatePerSecond×intervalMs/1000 = %.1f users per tick exceeds batchSize %d, so the adaptive rate could never reach it; raise batchSize or lower maxRatePerSecond",
			ErrInvalidConfig, c.MaxRate*c.Interval.Seconds(), c.BatchSize)
	}
	return nil
}

// RateInForce is the admission rate with eff the adaptive rate stored (0:
// none): while the rate is adaptive, that rate within its bounds, else the
// configured one.
func (c Config) RateInForce(eff float64) float64 {
	if c.Adaptive && eff > 0 {
		return max(c.MinRate, min(eff, c.MaxRate))
	}
	return c.RatePerSecond
}

// perTick is how many users one tick admits on average.
func (c Config) perTick() float64 { return c.RatePerSecond * c.Interval.Seconds() }

// The proof of work's difficulty a queue may ask for (challengeCost), in
// PBKDF2 iterations per attempt: below 10 a browser's per-call overhead is
// the whole cost, and above 100,000 checking one solution would take tens
// of milliseconds of the server's time (package challenge refuses more).
// The default, measured in docs/security.md, is about 0.5 s of one core of
// native code per place, about a second for the page in Chromium on two
// cores.
const (
	minChallengeCost, maxChallengeCost = 10, 100_000
	defaultChallengeCost               = 700
)

// Every per-queue setting is declared once, in Settings: its name in the
// admin JSON, its field in the store's config hash (wr:{q}:cfg on Redis),
// its kind, the values it takes, its default, what it means, and how it is
// read and written on Config. Validation, the fields the Redis store writes
// and parses, the admin API's input and output, the settings the admin page
// builds its form from and the check of openapi.yaml all follow this table,
// so a new setting is its own logic plus one row here. So do phases: a row
// with Phased may be changed by a phase, and a phase's JSON, what is in
// force (Config.InForce), the Redis store's phase_ fields and the schedule
// follow. (The Lua scripts read the fields they use by name, a phase's
// first, adm.phase_x or cfg.x: they are the logic, not the declaration.)

// Kind is the type of a setting's value.
type Kind string

const (
	// Number is a float64.
	Number Kind = "number"
	// Integer is an int64.
	Integer Kind = "integer"
	// Bool is true or false.
	Bool Kind = "boolean"
	// Duration is a time.Duration, given in the admin JSON as a whole
	// number of the setting's Unit and stored in milliseconds.
	Duration Kind = "duration"
	// Instant is a time.Time, given in the admin JSON as an RFC 3339 string
	// ("" or absent: none) and stored as Unix milliseconds (0: none).
	Instant Kind = "date-time"
	// Choice is a string, one of the setting's Choices.
	Choice Kind = "choice"
	// readOnlyText is a string: only a read-only setting is text, so no
	// code outside sets one.
	readOnlyText Kind = "string"
	// TextByLanguage is a Message: in the admin JSON a string (one text
	// for everyone) or an object of strings by language tag, "" for none;
	// stored as JSON.
	TextByLanguage Kind = "text-by-language"
	// PhaseList is a []Phase: in the admin JSON a list of phase objects
	// (json.RawMessage, or its text), [] for none; stored as that JSON.
	PhaseList Kind = "phases"
	// LaneList is a lane.List: in the admin JSON a list of lane objects
	// (json.RawMessage, or its text), [] for none; stored as that JSON.
	LaneList Kind = "lanes"
)

// Setting declares one per-queue setting.
type Setting struct {
	// Name is the setting's name in the admin JSON (ratePerSecond).
	Name string
	// Field is its field in the store's config hash (rate).
	Field string
	// Kind follows from the row's value: the Go type of its field on
	// Config decides it (declared), so the two cannot disagree.
	Kind Kind
	// Unit is what one JSON number of a Duration counts (time.Millisecond
	// for intervalMs).
	Unit time.Duration
	// Min and Max bound the JSON value of a number (inclusive; Min is
	// excluded when MinExclusive).
	Min, Max     float64
	MinExclusive bool
	// ZeroMeansOff: 0 is accepted too, outside [Min, Max], and turns the
	// setting off (abandonAfterSeconds).
	ZeroMeansOff bool
	// Choices are the values a Choice takes, from its row's value.
	Choices []string
	// ReadOnly settings are shown by the admin API but never set through
	// it (where the rate came from).
	ReadOnly bool
	// Role is the role that may change the setting through the admin API
	// (issue 56; package staff): staff.Operator for the night's levers
	// (the rate, pausing, the message), staff.Admin, filled in by
	// declared, for every other settable row; none for a read-only one.
	Role staff.Role
	// RequiredInStore: every config ever written has the field, so a
	// config hash without it is damaged (a partial write, an evicted or
	// hand-edited key), never an old one to fill with the default.
	RequiredInStore bool
	// Default is the JSON value a queue starts with (DefaultConfig).
	Default any
	// Label names the setting for people in a few words, and ChoiceLabels
	// name a Choice's values in Choices' order: in English, the one place
	// English has them (the admin page and --help show them); the page's
	// other languages translate them in internal/web/messages, where every
	// language, English too, says what each setting does
	// (settingHelp<Name>).
	Label        string
	ChoiceLabels []string
	// Flag is the command-line flag (and, by it, the environment variable)
	// that sets the setting for the default queue and new queues; "" for
	// none.
	Flag string
	// Phased: a phase may change the setting while it lasts (Phase's
	// Overrides, by Name). All else about phases follows from it: what is
	// in force (Config.InForce), a phase's JSON, the Redis store's phase_
	// fields, the schedule and openapi.yaml's Phase schema.
	Phased bool

	// inPhase, if set, is what else the setting's phase value changes on
	// the settings in force (a phase's rate is a fixed rate).
	inPhase func(c *Config, phase string)

	// value is the setting's one typed accessor: where on a Config its
	// value lives (number, integer, duration, boolean, instant, choice,
	// text, textByLanguage). Its get and set derive from it.
	value access
}

// access is a setting's typed accessor as the table's code uses it: get
// reads the setting's value on a Config as its Kind's Go type — float64
// (Number), int64 (Integer), bool, time.Duration, time.Time, string
// (Choice, readOnlyText) or Message (TextByLanguage) — and set writes one. Only
// the constructors below make one, each pairing a Kind with its Go type,
// so the table's code always hands set the type it takes.
type access struct {
	kind    Kind
	choices []string
	get     func(*Config) any
	set     func(*Config, any)
}

// kindValue is the Go type of a Kind's values.
type kindValue interface {
	float64 | int64 | bool | time.Duration | time.Time | string | Message | []Phase | lane.List
}

// field is the accessor of a setting of kind whose Config field, at,
// holds the kind's own Go type.
func field[T kindValue](kind Kind, at func(*Config) *T) access {
	return access{kind: kind, get: func(c *Config) any { return *at(c) }, set: func(c *Config, v any) { *at(c) = v.(T) }}
}

func number(at func(*Config) *float64) access         { return field(Number, at) }
func duration(at func(*Config) *time.Duration) access { return field(Duration, at) }
func boolean(at func(*Config) *bool) access           { return field(Bool, at) }
func instant(at func(*Config) *time.Time) access      { return field(Instant, at) }
func text(at func(*Config) *string) access            { return field(readOnlyText, at) }
func textByLanguage(at func(*Config) *Message) access { return field(TextByLanguage, at) }
func phaseList(at func(*Config) *[]Phase) access      { return field(PhaseList, at) }
func laneList(at func(*Config) *lane.List) access     { return field(LaneList, at) }

// integer is the accessor of an Integer whose field is any integer type.
func integer[T ~int | ~int64](at func(*Config) *T) access {
	return access{kind: Integer, get: func(c *Config) any { return int64(*at(c)) }, set: func(c *Config, v any) { *at(c) = T(v.(int64)) }}
}

// choice is the accessor of a Choice among choices, whose field is of
// their string type.
func choice[T ~string](choices []T, at func(*Config) *T) access {
	a := access{kind: Choice, get: func(c *Config) any { return string(*at(c)) }, set: func(c *Config, v any) { *at(c) = T(v.(string)) }}
	for _, ch := range choices {
		a.choices = append(a.choices, string(ch))
	}
	return a
}

// declared completes the rows with what their values decide: the Kind,
// and a Choice's values; and a settable row that names no role needs
// admin (fail closed: a new setting is an admin's until said otherwise).
func declared(rows []Setting) []Setting {
	for i := range rows {
		rows[i].Kind, rows[i].Choices = rows[i].value.kind, rows[i].value.choices
		if rows[i].Role == "" && !rows[i].ReadOnly {
			rows[i].Role = staff.Admin
		}
	}
	return rows
}

// Settings is every per-queue setting, in the order people read them.
var Settings = declared([]Setting{
	{Name: "ratePerSecond", Field: "rate", Role: staff.Operator, RequiredInStore: true, Phased: true, inPhase: fixedRate, Min: 0, MinExclusive: true, Max: 1e6, Default: 100.0,
		Label: "Rate (users / s)", Flag: "rate",
		value: number(func(c *Config) *float64 { return &c.RatePerSecond })},
	{Name: "batchSize", Field: "batch", RequiredInStore: true, Min: 1, Max: 10_000, Default: int64(10),
		Label: "Batch", Flag: "batch",
		value: integer(func(c *Config) *int { return &c.BatchSize })},
	{Name: "intervalMs", Field: "interval_ms", RequiredInStore: true, Unit: time.Millisecond, Min: 1, Max: 60_000, Default: int64(100),
		Label: "Tick (ms)", Flag: "interval",
		value: duration(func(c *Config) *time.Duration { return &c.Interval })},
	{Name: "capacity", Field: "capacity", RequiredInStore: true, Min: 1, Max: 100_000_000, Default: int64(100_000),
		Label: "Capacity", Flag: "capacity",
		value: integer(func(c *Config) *int64 { return &c.Capacity })},
	{Name: "tokenTtlSeconds", Field: "ttl_ms", RequiredInStore: true, Unit: time.Second, Min: 1, Max: 86_400, Default: int64(300),
		Label: "Entry lifetime (s)", Flag: "token-ttl",
		value: duration(func(c *Config) *time.Duration { return &c.TokenTTL })},
	{Name: "sessionMaxSeconds", Field: "session_ms", Phased: true, Unit: time.Second, ZeroMeansOff: true, Min: 1, Max: 7 * 86_400, Default: int64(0),
		Label: "Session at most (s)", Flag: "session-max",
		value: duration(func(c *Config) *time.Duration { return &c.SessionMax })},
	{Name: "maxActiveTokens", Field: "max_active", Phased: true, Min: 0, Max: 100_000_000, Default: int64(0),
		Label: "Live tokens cap", Flag: "max-active-tokens",
		value: integer(func(c *Config) *int64 { return &c.MaxActiveTokens })},
	{Name: "admitPerUnit", Field: "per_unit", ZeroMeansOff: true, Min: 0.1, Max: 1000, Default: 1.0,
		Label: "Entries per unit left", Flag: "admit-per-unit",
		value: number(func(c *Config) *float64 { return &c.AdmitPerUnit })},
	{Name: "soldOutPollSeconds", Field: "soldout_poll_ms", Unit: time.Second, Min: 5, Max: 600, Default: int64(pollAfterSoldOut),
		Label: "Sold-out poll (s)",
		value: duration(func(c *Config) *time.Duration { return &c.SoldOutPoll })},
	{Name: "paused", Field: "paused", Role: staff.Operator, Default: false,
		Label: "Paused",
		value: boolean(func(c *Config) *bool { return &c.Paused })},
	{Name: "adaptive", Field: "adaptive", Role: staff.Operator, Default: false,
		Label: "Adaptive rate", Flag: "adaptive",
		value: boolean(func(c *Config) *bool { return &c.Adaptive })},
	{Name: "minRatePerSecond", Field: "min_rate", Min: 0, MinExclusive: true, Max: 1e6, Default: 1.0,
		Label: "Floor (users / s)", Flag: "min-rate",
		value: number(func(c *Config) *float64 { return &c.MinRate })},
	{Name: "maxRatePerSecond", Field: "max_rate", Min: 0, MinExclusive: true, Max: 1e6, Default: 100.0,
		Label: "Ceiling (users / s)", Flag: "max-rate",
		value: number(func(c *Config) *float64 { return &c.MaxRate })},
	{Name: "targetLatencyMs", Field: "target_ms", Unit: time.Millisecond, Min: 1, Max: 60_000, Default: int64(250),
		Label: "Target latency (ms)", Flag: "target-latency",
		value: duration(func(c *Config) *time.Duration { return &c.TargetLatency })},
	{Name: "abandonAfterSeconds", Field: "abandon_ms", Unit: time.Second, ZeroMeansOff: true, Min: 15, Max: 86_400, Default: int64(0),
		Label: "Skip no-shows after (s)", Flag: "abandon-after",
		value: duration(func(c *Config) *time.Duration { return &c.AbandonAfter })},
	{Name: "abandonAfterSecondsHidden", Field: "abandon_hidden_ms", Unit: time.Second, Min: 15, Max: 86_400, Default: int64(15 * 60),
		Label: "Skip hidden pages after (s)", Flag: "abandon-after-hidden",
		value: duration(func(c *Config) *time.Duration { return &c.AbandonAfterHidden })},
	{Name: "notifyOnReady", Field: "notify_ready", Default: false,
		Label: "Tell the shop who is let in", Flag: "notify-on-ready",
		value: boolean(func(c *Config) *bool { return &c.NotifyOnReady })},
	{Name: "notifyLeadSeconds", Field: "notify_lead_ms", Unit: time.Second, ZeroMeansOff: true, Min: 5, Max: 3600, Default: int64(0),
		Label: "Notify the page before its turn (s)", Flag: "notify-lead",
		value: duration(func(c *Config) *time.Duration { return &c.NotifyLead })},
	{Name: "opensAt", Field: "opens_at", Default: "",
		Label: "Opens at",
		value: instant(func(c *Config) *time.Time { return &c.OpensAt })},
	{Name: "closesAt", Field: "closes_at", Default: "",
		Label: "Closes at",
		value: instant(func(c *Config) *time.Time { return &c.ClosesAt })},
	{Name: "queueingMethod", Field: "method", Phased: true, Default: string(MethodFIFO),
		Label: "Queueing method", Flag: "queueing-method", ChoiceLabels: []string{"First come, first served", "Closed to newcomers", "Straight in (count and protect)", "Random draw (lottery)"},
		value: choice([]QueueingMethod{MethodFIFO, MethodReject, MethodPassthrough, MethodRandom}, func(c *Config) *QueueingMethod { return &c.Method })},
	{Name: "entry", Field: "entry", Phased: true, Default: string(JoinChallenge),
		Label: "Who may join", Flag: "entry-policy", ChoiceLabels: []string{"Anyone", "Proof of work for anonymous", "Signed-in only", "Human check for anonymous"},
		value: choice([]JoinPolicy{JoinAny, JoinChallenge, JoinSigned, JoinTurnstile}, func(c *Config) *JoinPolicy { return &c.Join })},
	{Name: "challengeCost", Field: "challenge_cost", Min: minChallengeCost, Max: maxChallengeCost, Default: int64(defaultChallengeCost),
		Label: "Proof-of-work cost", Flag: "challenge-cost",
		value: integer(func(c *Config) *int { return &c.ChallengeCost })},
	{Name: "suspects", Field: "suspects", Default: string(suspect.Shadow),
		Label: "Likely bots", ChoiceLabels: []string{"Shadow line", "Costlier proof of work", "Refused", "Counted only"},
		value: choice([]suspect.Action{suspect.Shadow, suspect.Challenge, suspect.Refuse, suspect.Allow}, func(c *Config) *suspect.Action { return &c.Suspects })},
	{Name: "suspectChallengeCost", Field: "suspect_cost", ZeroMeansOff: true, Min: minChallengeCost, Max: maxChallengeCost, Default: int64(0),
		Label: "Suspects' proof-of-work cost",
		value: integer(func(c *Config) *int { return &c.SuspectChallengeCost })},
	{Name: "shadowAdmits", Field: "shadow_admits", Default: string(suspect.AdmitNever),
		Label: "Shadow line let in", ChoiceLabels: []string{"Never", "Last, once nobody else waits"},
		value: choice([]suspect.Admits{suspect.AdmitNever, suspect.AdmitLast}, func(c *Config) *suspect.Admits { return &c.ShadowAdmits })},
	{Name: "shadowCapacity", Field: "shadow_capacity", Min: 1, Max: 100_000_000, Default: int64(100_000),
		Label: "Shadow line capacity",
		value: integer(func(c *Config) *int64 { return &c.ShadowCapacity })},
	{Name: "humanCheckSigned", Field: "human_check_signed", Default: false,
		Label: "Human check for signed-in users",
		value: boolean(func(c *Config) *bool { return &c.HumanCheckSigned })},
	{Name: "message", Field: "message", Role: staff.Operator, Phased: true, Default: "",
		Label: "Message to the line",
		value: textByLanguage(func(c *Config) *Message { return &c.Message })},
	{Name: "lanes", Field: "lanes", Phased: true, Default: "",
		Label: "Lanes",
		value: laneList(func(c *Config) *lane.List { return &c.Lanes })},
	{Name: "phases", Field: "phases", Default: "",
		Label: "Phases",
		value: phaseList(func(c *Config) *[]Phase { return &c.Phases })},
	{Name: "rateDerivation", Field: "derivation", ReadOnly: true, Default: "set directly: 100/s",
		Label: "Rate derived from",
		value: text(func(c *Config) *string { return &c.RateDerivation })},
})

// fixedRate: a phase's own rate is a fixed rate, so the adaptive rate
// rests while the phase lasts.
func fixedRate(c *Config, phase string) {
	c.Adaptive = false
	c.RateDerivation = fmt.Sprintf("phase %s: %v/s", phase, c.RatePerSecond)
}

// SettingNamed returns the setting with the given JSON name.
func SettingNamed(name string) (Setting, bool) {
	for _, s := range Settings {
		if s.Name == name {
			return s, true
		}
	}
	return Setting{}, false
}

// Value is the setting's value on c as the admin JSON shows it: float64,
// int64 (Integer, and Duration in whole Units), bool, string, nil for an
// Instant that is not set, or a list of phases as encoding/json decodes
// one ([]any).
func (s Setting) Value(c Config) any {
	switch v := s.value.get(&c).(type) {
	case time.Duration:
		return int64(v / s.Unit)
	case time.Time:
		if v.IsZero() {
			return nil
		}
		return v.UTC().Format(time.RFC3339Nano)
	case Message:
		return v.adminValue()
	case []Phase:
		list := []any{} // [] for none, not null
		if len(v) > 0 {
			_ = json.Unmarshal([]byte(phasesJSON(v)), &list) // what phasesJSON wrote
		}
		return list
	case lane.List:
		list := []any{}
		_ = json.Unmarshal([]byte(v.JSON()), &list) // what JSON wrote
		return list
	default:
		return v
	}
}

// Set puts an admin JSON value on c — float64 (Number), int64 (Integer,
// Duration), bool, string (Instant: RFC 3339, "" for none; Choice; readOnlyText)
// or, for TextByLanguage, a string or map[string]string — after checking
// it, so an error names the setting and nothing is set.
func (s Setting) Set(c *Config, v any) error {
	switch s.Kind {
	case Number:
		f, ok := v.(float64)
		if !ok {
			return s.typeError(v)
		}
		if err := s.check(f); err != nil {
			return err
		}
		s.value.set(c, f)
	case Integer, Duration:
		n, ok := v.(int64)
		if !ok {
			return s.typeError(v)
		}
		if err := s.check(float64(n)); err != nil {
			return err
		}
		if s.Kind == Integer {
			s.value.set(c, n)
		} else {
			s.value.set(c, time.Duration(n)*s.Unit) // in range, so it cannot overflow
		}
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return s.typeError(v)
		}
		s.value.set(c, b)
	case Instant:
		str, ok := v.(string)
		if !ok {
			return s.typeError(v)
		}
		t, err := parseInstant(str)
		if err != nil {
			return fmt.Errorf("%w: %s must be an RFC 3339 time such as 2026-12-24T20:00:00+09:00 (or \"\" for none), got %q",
				ErrInvalidConfig, s.Name, str)
		}
		s.value.set(c, t)
	case Choice, readOnlyText:
		str, ok := v.(string)
		if !ok {
			return s.typeError(v)
		}
		if s.Kind == Choice {
			if err := s.checkChoice(str); err != nil {
				return err
			}
		}
		s.value.set(c, str)
	case TextByLanguage:
		m, err := parseMessage(v)
		if err != nil {
			return err
		}
		s.value.set(c, m)
	case PhaseList, LaneList:
		return s.setList(c, v)
	}
	return nil
}

// setList sets a list of phases or lanes from its JSON, as
// json.RawMessage or its text.
func (s Setting) setList(c *Config, v any) error {
	var raw []byte
	switch v := v.(type) {
	case json.RawMessage:
		raw = v
	case string:
		raw = []byte(v)
	default:
		return s.typeError(v)
	}
	if s.Kind == LaneList {
		lanes, err := lane.Parse(raw)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		s.value.set(c, lanes)
		return nil
	}
	phases, err := parsePhases(raw)
	if err != nil {
		return err
	}
	s.value.set(c, phases)
	return nil
}

// Parse sets the setting on c from text as a command line gives it: a
// number, a Go duration such as 100ms for a Duration, true or false, one
// of the choices, an RFC 3339 time, a message's one text or its JSON
// object of texts by language. The range is not checked here:
// Config.Validate checks it with the rules between settings, naming them.
func (s Setting) Parse(c *Config, text string) error {
	var v any
	var err error
	switch s.Kind {
	case Number:
		v, err = strconv.ParseFloat(text, 64)
	case Integer:
		v, err = strconv.ParseInt(text, 10, 64)
	case Duration:
		v, err = time.ParseDuration(text)
	case Bool:
		v, err = strconv.ParseBool(text)
	case Instant:
		v, err = parseInstant(text)
	case TextByLanguage:
		v, err = parseMessageText(text)
	case PhaseList:
		if v, err = parsePhases([]byte(text)); err != nil {
			return err
		}
	case LaneList:
		if v, err = lane.Parse([]byte(text)); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	default:
		v = text
	}
	if err != nil {
		return fmt.Errorf("%s must be a %s", s.Name, s.Kind)
	}
	s.value.set(c, v)
	return nil
}

// Format is the setting's value on c as Parse reads it.
func (s Setting) Format(c Config) string {
	switch v := s.value.get(&c).(type) {
	case time.Time:
		if v.IsZero() {
			return ""
		}
		return v.UTC().Format(time.RFC3339Nano)
	case Message:
		return v.text()
	case []Phase:
		return phasesJSON(v)
	case lane.List:
		return v.JSON()
	default:
		return fmt.Sprint(v)
	}
}

func (s Setting) typeError(v any) error {
	return fmt.Errorf("%w: %s must be a %s, got %T", ErrInvalidConfig, s.Name, s.Kind, v)
}

func parseInstant(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	// Stored in whole milliseconds: the instant is exactly what is stored.
	return t.Truncate(time.Millisecond).UTC(), nil
}

// check holds a number against the setting's range.
func (s Setting) check(v float64) error {
	if s.Kind != Number && s.Kind != Integer && s.Kind != Duration {
		return nil
	}
	if s.ZeroMeansOff && v == 0 {
		return nil
	}
	low := v >= s.Min
	if s.MinExclusive {
		low = v > s.Min
	}
	if low && v <= s.Max { // false for NaN
		return nil
	}
	return fmt.Errorf("%w: %s must be %s, got %s", ErrInvalidConfig, s.Name, s.rangeText(), strconv.FormatFloat(v, 'f', -1, 64))
}

// checkChoice holds a string against the setting's choices.
func (s Setting) checkChoice(v string) error {
	if slices.Contains(s.Choices, v) {
		return nil
	}
	last := len(s.Choices) - 1
	return fmt.Errorf("%w: %s must be %s or %s, got %q", ErrInvalidConfig, s.Name, strings.Join(s.Choices[:last], ", "), s.Choices[last], v)
}

// Range says in words which values the setting takes.
func (s Setting) rangeText() string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	r := g(s.Min) + ".." + g(s.Max)
	if s.MinExclusive {
		r = "> " + g(s.Min) + " and ≤ " + g(s.Max)
	}
	if s.ZeroMeansOff {
		r = "0 (off) or " + r
	}
	return r
}

// validate holds the setting's value on c against its range. A Duration
// is held as is, not truncated to its Unit (300 ms is not 1..86400
// seconds), and must be whole milliseconds, as the store keeps it.
func (s Setting) validate(c Config) error {
	switch v := s.value.get(&c).(type) {
	case float64:
		return s.check(v)
	case int64:
		return s.check(float64(v))
	case string:
		if s.Kind == Choice {
			return s.checkChoice(v)
		}
	case []Phase:
		return c.validatePhases()
	case lane.List:
		if err := v.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	case time.Duration:
		if v%time.Millisecond != 0 {
			return fmt.Errorf("%w: %s must be whole milliseconds, got %v", ErrInvalidConfig, s.Name, v)
		}
		return s.check(float64(v) / float64(s.Unit))
	}
	return nil
}

// StoreFields is c as the store's config hash holds it: field, value pairs
// of every setting, in table order.
func StoreFields(c Config) []string {
	out := make([]string, 0, 2*len(Settings))
	for _, s := range Settings {
		var v string
		switch x := s.value.get(&c).(type) {
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		case int64:
			v = strconv.FormatInt(x, 10)
		case bool:
			v = map[bool]string{true: "1", false: "0"}[x]
		case time.Duration:
			v = strconv.FormatInt(x.Milliseconds(), 10)
		case time.Time:
			v = "0"
			if !x.IsZero() {
				v = strconv.FormatInt(x.UnixMilli(), 10)
			}
		case string:
			v = x
		case Message:
			v = x.stored
		case []Phase:
			v = phasesJSON(x)
		case lane.List:
			v = x.JSON()
		}
		out = append(out, s.Field, v)
	}
	return out
}

// ConfigFromFields reads a config as StoreFields wrote it, each field read
// through get. A field missing (written before the setting existed) takes
// its default; a malformed one is an error naming it.
func ConfigFromFields(get func(field string) (string, bool)) (Config, error) {
	c := DefaultConfig()
	for _, s := range Settings {
		raw, ok := get(s.Field)
		if !ok {
			if s.RequiredInStore {
				return Config{}, fmt.Errorf("queue config damaged: field %s missing", s.Field)
			}
			continue
		}
		var err error
		switch s.Kind {
		case Number:
			var f float64
			f, err = strconv.ParseFloat(raw, 64)
			s.value.set(&c, f)
		case Integer, Duration, Instant:
			var n int64
			n, err = strconv.ParseInt(raw, 10, 64)
			switch s.Kind {
			case Integer:
				s.value.set(&c, n)
			case Duration:
				s.value.set(&c, time.Duration(n)*time.Millisecond)
			case Instant:
				var t time.Time
				if n != 0 {
					t = time.UnixMilli(n).UTC()
				}
				s.value.set(&c, t)
			}
		case Bool:
			s.value.set(&c, raw == "1")
		case Choice:
			err = s.checkChoice(raw)
			s.value.set(&c, raw)
		case readOnlyText:
			s.value.set(&c, raw)
		case TextByLanguage:
			var m Message
			m, err = messageFromStore(raw)
			s.value.set(&c, m)
		case PhaseList:
			var phases []Phase
			phases, err = parsePhases([]byte(raw))
			s.value.set(&c, phases)
		case LaneList:
			var lanes lane.List
			lanes, err = lane.Parse([]byte(raw))
			s.value.set(&c, lanes)
		}
		if err != nil {
			return Config{}, fmt.Errorf("queue config field %s: %w", s.Field, err)
		}
	}
	return c, nil
}

// Apply puts the admin's changes (setting name → admin JSON value, as Set
// takes it) on c, in table order, then the rules between settings: a rate
// set by hand says so, and switches the adaptive rate off unless the same
// change asks for it. Read-only and unknown names are refused. The result
// is not validated as a whole: PutConfig does that.
func Apply(c Config, changes map[string]any) (Config, error) {
	for name := range changes {
		if s, ok := SettingNamed(name); !ok || s.ReadOnly {
			return c, fmt.Errorf("%w: %q is not a setting that can be changed", ErrInvalidConfig, name)
		}
	}
	before := c
	for _, s := range Settings {
		v, ok := changes[s.Name]
		if !ok {
			continue
		}
		if err := s.Set(&c, v); err != nil {
			return before, err
		}
	}
	if _, ok := changes["ratePerSecond"]; ok {
		if _, ok := changes["adaptive"]; !ok {
			c.Adaptive = false
		}
		if c.RatePerSecond != before.RatePerSecond {
			c.RateDerivation = "set by admin"
		}
	}
	// A first phase with a pre-queue is the queue's opening.
	if _, ok := changes["phases"]; ok && len(c.Phases) > 0 && c.Phases[0].PreQueue {
		if _, ok := changes["opensAt"]; !ok {
			c.OpensAt = c.Phases[0].StartsAt
		}
	}
	return c, nil
}

// defaultFromSettings is the config every setting's Default gives.
func defaultFromSettings() Config {
	var c Config
	for _, s := range Settings {
		if s.ReadOnly {
			s.value.set(&c, s.Default)
			continue
		}
		if err := s.Set(&c, s.Default); err != nil {
			panic("queue: the default of " + s.Name + " is refused: " + err.Error())
		}
	}
	return c
}
