package challenge

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCost keeps solving fast in tests (4096 × 10 iterations on average).
const testCost = 10 // the least a queue may ask (challengeCost's minimum in queue.Settings)

// defaultCost is new queues' difficulty (queue.DefaultConfig().ChallengeCost), for
// the benchmarks.
const defaultCost = 700

// clock is a settable time for expiry.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func solved(t testing.TB, is *Issuer, queue string) Payload {
	t.Helper()
	p, err := Solve(context.Background(), is.Issue(queue, testCost), 2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSolvedChallengeVerifies(t *testing.T) {
	t.Parallel()
	is := NewIssuer([]byte("a secret of at least thirty-two bytes"), nil)
	p := solved(t, is, "default")
	v, err := is.Verify(p.Encode(), "default")
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if v.ReplayKey != p.Challenge.Parameters.Nonce {
		t.Fatalf("replay key %q, want the nonce %q", v.ReplayKey, p.Challenge.Parameters.Nonce)
	}
	if d := time.Until(v.ExpiresAt); d <= TTL-time.Minute || d > TTL {
		t.Fatalf("expires in %v, want about %v", d, TTL)
	}
	// ALTCHA's rule, independently of the code under test: the key's hex
	// starts with the prefix.
	if !strings.HasPrefix(p.Solution.DerivedKey, KeyPrefix) {
		t.Fatalf("derived key %s does not start with %s", p.Solution.DerivedKey, KeyPrefix)
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Now()}
	is := NewIssuer([]byte("a secret of at least thirty-two bytes"), clk.now)
	good := solved(t, is, "default")

	// resign re-signs changed parameters as the server would, so only the
	// change itself is wrong.
	resign := func(p Payload) Payload {
		p.Challenge.Signature = is.sign(p.Challenge.Parameters)
		return p
	}
	// wrongCounter finds a counter whose key lacks the prefix.
	wrongCounter := good
	for n := int64(0); ; n++ {
		key := good.Challenge.Parameters.derive(uint32(n))
		if !hasPrefix(key, KeyPrefix) {
			wrongCounter.Solution = Solution{Counter: n, DerivedKey: hex.EncodeToString(key)}
			break
		}
	}
	cases := []struct {
		name    string
		payload func() string
		queue   string
		want    error
	}{
		{"another queue", func() string { return good.Encode() }, "vip", ErrInvalid},
		{"another server's secret", func() string {
			other := NewIssuer([]byte("another secret of thirty-two bytes!!"), clk.now)
			return solved(t, other, "default").Encode()
		}, "default", ErrInvalid},
		{"cost lowered after signing", func() string {
			p := good
			p.Challenge.Parameters.Cost = testCost + 1
			return p.Encode()
		}, "default", ErrInvalid},
		{"queue changed after signing", func() string {
			p := good
			p.Challenge.Parameters.Data = map[string]string{"queue": "vip"}
			return p.Encode()
		}, "vip", ErrInvalid},
		{"no signature", func() string {
			p := good
			p.Challenge.Signature = ""
			return p.Encode()
		}, "default", ErrInvalid},
		{"derived key of another counter", func() string {
			p := good
			p.Solution.Counter++
			return p.Encode()
		}, "default", ErrInvalid},
		{"a counter that does not solve it", func() string { return wrongCounter.Encode() }, "default", ErrInvalid},
		{"counter out of range", func() string {
			p := good
			p.Solution.Counter = 1 << 32
			return p.Encode()
		}, "default", ErrInvalid},
		{"another algorithm, signed", func() string {
			p := good
			p.Challenge.Parameters.Algorithm = "SHA-256"
			return resign(p).Encode()
		}, "default", ErrInvalid},
		{"cost below the minimum, signed", func() string {
			p := good
			p.Challenge.Parameters.Cost = 1
			return resign(p).Encode()
		}, "default", ErrInvalid},
		{"unknown field", func() string {
			b, _ := json.Marshal(map[string]any{"challenge": good.Challenge, "solution": good.Solution, "extra": 1})
			return base64.StdEncoding.EncodeToString(b)
		}, "default", ErrInvalid},
		{"not base64", func() string { return "%%%" }, "default", ErrInvalid},
		{"not JSON", func() string { return base64.StdEncoding.EncodeToString([]byte("hello")) }, "default", ErrInvalid},
		{"empty", func() string { return "" }, "default", ErrInvalid},
		{"too long", func() string { return strings.Repeat("A", MaxPayloadLen+1) }, "default", ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := is.Verify(c.payload(), c.queue)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
		})
	}

	t.Run("expired", func(t *testing.T) {
		clk.t = clk.t.Add(TTL)
		defer func() { clk.t = clk.t.Add(-TTL) }()
		if _, err := is.Verify(good.Encode(), "default"); !errors.Is(err, ErrExpired) {
			t.Fatalf("Verify after TTL: %v, want ErrExpired", err)
		}
	})
	t.Run("URL-safe base64 without padding", func(t *testing.T) {
		b, _ := json.Marshal(good)
		if _, err := is.Verify(base64.RawURLEncoding.EncodeToString(b), "default"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSignedJSONIsCanonical holds the signed bytes to ALTCHA's canonical
// JSON (keys sorted at every level), written out by hand, so a browser
// library signing or checking the same parameters agrees.
func TestSignedJSONIsCanonical(t *testing.T) {
	t.Parallel()
	p := Parameters{Algorithm: Algorithm, Cost: 300, Data: map[string]string{"queue": "default"},
		ExpiresAt: 1790000000, KeyLength: 32, KeyPrefix: "000",
		Nonce: "00112233445566778899aabbccddeeff", Salt: "ffeeddccbbaa99887766554433221100"}
	const want = `{"algorithm":"PBKDF2/SHA-256","cost":300,"data":{"queue":"default"},"expiresAt":1790000000,` +
		`"keyLength":32,"keyPrefix":"000","nonce":"00112233445566778899aabbccddeeff","salt":"ffeeddccbbaa99887766554433221100"}`
	is := NewIssuer([]byte("k"), nil)
	m := hmac.New(sha256.New, is.key)
	m.Write([]byte(want))
	if got := is.sign(p); got != hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("signature is not HMAC-SHA-256 over %s", want)
	}
}

// TestDeriveIsPBKDF2 checks one attempt against a published PBKDF2-HMAC-
// SHA-256 vector (password "password", salt "salt", 2 iterations, 32
// bytes; RFC 7914's companion vectors), with the password laid out as
// nonce ‖ big-endian counter.
func TestDeriveIsPBKDF2(t *testing.T) {
	t.Parallel()
	// nonce "pass" and counter "word" read big-endian make "password".
	p := Parameters{Cost: 2, Nonce: hex.EncodeToString([]byte("pass")), Salt: hex.EncodeToString([]byte("salt"))}
	counter := uint32('w')<<24 | uint32('o')<<16 | uint32('r')<<8 | uint32('d')
	const want = "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"
	if got := hex.EncodeToString(p.derive(counter)); got != want {
		t.Fatalf("derive = %s, want %s", got, want)
	}
}

func TestHasPrefixOddLength(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key    []byte
		prefix string
		want   bool
	}{
		{[]byte{0x00, 0x0f}, "000", true},
		{[]byte{0x00, 0x10}, "000", false},
		{[]byte{0xab, 0xcd}, "ABC", true},
		{[]byte{0x00}, "0000", false},
	}
	for _, c := range cases {
		if got := hasPrefix(c.key, c.prefix); got != c.want {
			t.Errorf("hasPrefix(%x, %q) = %v, want %v", c.key, c.prefix, got, c.want)
		}
	}
}

func TestSolveStopsWithContext(t *testing.T) {
	t.Parallel()
	is := NewIssuer([]byte("k"), nil)
	c := is.Issue("default", MaxCost) // minutes of work: it must stop early
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Solve(ctx, c, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Solve: %v, want DeadlineExceeded", err)
	}
}

// BenchmarkVerify is the server's cost of one accepted solution at the
// default difficulty: one derivation of defaultCost iterations.
func BenchmarkVerify(b *testing.B) {
	is := NewIssuer([]byte("k"), nil)
	c := is.Issue("default", defaultCost)
	// A valid solution found once, outside the timing.
	p, err := Solve(context.Background(), c, 2)
	if err != nil {
		b.Fatal(err)
	}
	enc := p.Encode()
	cpu := startCPU(b)
	for b.Loop() {
		if _, err := is.Verify(enc, "default"); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report()
}

// cpuMeter reports CPU time per op beside ns/op: on a shared machine the
// wall clock counts other people's work too.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuMeter { b.ResetTimer(); return cpuMeter{b: b, start: processCPU()} }

func (m cpuMeter) report() {
	m.b.ReportMetric(float64((processCPU()-m.start).Nanoseconds())/float64(m.b.N), "cpu-ns/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSolve is what a native Go script pays per place at the default
// difficulty, on one core (ns/op is CPU time per solution: one worker).
func BenchmarkSolve(b *testing.B) {
	is := NewIssuer([]byte("k"), nil)
	cpu := startCPU(b)
	for b.Loop() {
		if _, err := Solve(context.Background(), is.Issue("default", defaultCost), 1); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report()
}

// BenchmarkAttempt is one derivation at the default cost: a solution takes
// ExpectedAttempts of them on average.
func BenchmarkAttempt(b *testing.B) {
	c := NewIssuer([]byte("k"), nil).Issue("default", defaultCost).Parameters
	var n uint32
	cpu := startCPU(b)
	for b.Loop() {
		c.derive(n)
		n++
	}
	cpu.report()
}
