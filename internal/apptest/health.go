package apptest

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitStatus polls path until it answers status (within Patience):
// readiness follows the store's health check, made every second, not each
// probe.
func (in *Instance) WaitStatus(path string, status int) {
	in.T.Helper()
	deadline := time.Now().Add(Patience)
	for r := in.Do("GET", path, "", nil); r.Status != status; r = in.Do("GET", path, "", nil) {
		if time.Now().After(deadline) {
			in.T.Fatalf("GET %s: %d %s after %v, want %d", path, r.Status, r.Raw, Patience, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Readiness is one /readyz answer (path: "/readyz", or with its prefix and
// query) and what it says of the store.
type Readiness struct {
	Response
	Store    string
	Degraded []string
}

// Readiness asks path (/readyz, or with a prefix and query) once.
func (in *Instance) Readiness(path string) Readiness {
	in.T.Helper()
	r := in.Do("GET", path, "", nil)
	rd := Readiness{Response: r, Store: r.Str("store")}
	for _, q := range anySlice(r.Body["degradedQueues"]) {
		s, _ := q.(string)
		rd.Degraded = append(rd.Degraded, s)
	}
	return rd
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

// WaitReadiness polls path until until says yes, failing the test on the
// first answer that is not 200 (the instance must stay ready throughout)
// or after Patience.
func (in *Instance) WaitReadiness(path, what string, until func(Readiness) bool) Readiness {
	in.T.Helper()
	deadline := time.Now().Add(Patience)
	for {
		r := in.Readiness(path)
		if r.Status != http.StatusOK {
			in.T.Fatalf("%s while waiting for %s: %d %s, want 200 throughout", path, what, r.Status, r.Raw)
		}
		if until(r) {
			return r
		}
		if time.Now().After(deadline) {
			in.T.Fatalf("%s: no %s within %v; last %s", path, what, Patience, r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Metrics reads /metrics into "name{labels}" → value.
func Metrics(t testing.TB, base string) map[string]float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("/metrics: %d %s", res.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}
