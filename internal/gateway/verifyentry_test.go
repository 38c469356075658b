package gateway_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/gateway"
	"github.com/waitroom/waitroom/internal/testenv"
)

// TestVerifyEntryExamples runs each protected handler of
// examples/verify-entry, in the shops' languages (Go, Node with jose,
// Python with Debian's PyJWT), behind a live `waitroom proxy`, and holds it
// to the four cases a backend that verifies entries must get right: an
// entry the gateway forwarded is accepted; the same entry again (a replayed
// jti) is refused; an entry signed by another key is refused; an expired
// one is refused. A fresh entry signed by the gateway's key, sent the same
// way as the refused ones, is accepted: the refusals are the checks', not
// the way they were sent.
func TestVerifyEntryExamples(t *testing.T) {
	t.Parallel()
	for _, ex := range []struct {
		name  string
		start func(t *testing.T) []string // the command line that runs the example
	}{
		{"go", func(t *testing.T) []string {
			bin := filepath.Join(t.TempDir(), "verify-entry")
			out, err := exec.Command("go", append(append([]string{"build"}, apptest.GoBuildFlags...), "-o", bin, "../../examples/verify-entry/go")...).CombinedOutput()
			if err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			return []string{bin}
		}},
		{"node", func(t *testing.T) []string {
			modules := testenv.NodeModules(t)
			var pinned, installed struct {
				Version      string
				Dependencies map[string]string
			}
			readJSON(t, "../../examples/verify-entry/node/package.json", &pinned)
			readJSON(t, filepath.Join(modules, "jose", "package.json"), &installed)
			if pinned.Dependencies["jose"] != installed.Version {
				t.Fatalf("the Node example pins jose %q; tools/npm installs %q: pin the same version in both", pinned.Dependencies["jose"], installed.Version)
			}
			// The example as a shop runs it: its package.json (an ES
			// module) and node_modules beside it.
			dir := apptest.CopyTree(t, "../../examples/verify-entry/node")
			if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
				t.Fatal(err)
			}
			return []string{"node", filepath.Join(dir, "server.js")}
		}},
		{"python", func(t *testing.T) []string {
			script, err := filepath.Abs("../../examples/verify-entry/python/verify_entry.py")
			if err != nil {
				t.Fatal(err)
			}
			return []string{testenv.Python(t, "jwt", "cryptography"), "-B", script}
		}},
	} {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			argv := ex.start(t)
			port := testenv.FreePort(t)
			shopURL := fmt.Sprintf("http://127.0.0.1:%d", port)
			// Between the gateway and the example: a recorder of what the
			// gateway forwards, so the test can replay it.
			rec := &entryRecorder{}
			target, _ := url.Parse(shopURL)
			forward := httputil.NewSingleHostReverseProxy(target)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec.add(r.Header.Get("X-Waitroom-Entry"))
				forward.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, &apptest.UpstreamShop{Server: front}, nil)
			apptest.StartExample(t, argv,
				"LISTEN=127.0.0.1:"+fmt.Sprint(port),
				"WAITROOM_JWKS_URL="+p.Base+apptest.GatewayPrefix+"/.well-known/jwks.json",
				"WAITROOM_QUEUE=default",
				// What the gateway names by default: its prefix, and the
				// upstream's URL.
				"WAITROOM_ENTRY_ISSUER="+apptest.GatewayPrefix, "WAITROOM_ENTRY_AUDIENCE="+front.URL,
				"USED_ENTRIES_DB="+filepath.Join(t.TempDir(), "used-entries.db"))

			signer, err := gateway.ParseSigner(p.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			direct := func(to, entry string) apptest.Response {
				t.Helper()
				req, _ := http.NewRequest("POST", to+"/buy", nil)
				req.Header.Set("X-Waitroom-Entry", entry)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				r := apptest.Response{Status: res.StatusCode, Raw: string(raw)}
				json.Unmarshal(raw, &r.Body)
				return r
			}
			expect := func(what string, r apptest.Response, status int) {
				t.Helper()
				if r.Status != status {
					t.Errorf("%s: %d %s, want %d", what, r.Status, strings.TrimSpace(r.Raw), status)
				}
			}
			sign := func(user, queue string, at time.Time) string {
				t.Helper()
				h, err := signer.Sign(gateway.Entry{Issuer: apptest.GatewayPrefix, Audience: front.URL, User: user, Queue: queue, Route: "POST /buy", ID: apptest.UniqueID("jti")}, at)
				if err != nil {
					t.Fatal(err)
				}
				return h
			}

			// 1. Valid: let in by the line, the request through the gateway.
			buyer := apptest.UniqueID("buyer")
			r := p.Buy(buyer, p.Admitted(buyer))
			if r.Status != http.StatusOK || r.Body["bought"] != true || r.Body["user"] != buyer {
				t.Fatalf("a buyer let in by the line, through the gateway: %d %s", r.Status, r.Raw)
			}
			entry := rec.last(t)

			// 2. Replayed: the entry the gateway forwarded, sent again.
			expect("the forwarded entry replayed (same jti)", direct(shopURL, entry), http.StatusConflict)

			// 3. Signed by another key: under the gateway's kid, and under
			// its own.
			_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
			now := time.Now()
			claims := gateway.EntryClaims{Queue: "default", Route: "POST /buy", RegisteredClaims: jwt.RegisteredClaims{
				Issuer: apptest.GatewayPrefix, Audience: jwt.ClaimStrings{front.URL},
				Subject: buyer, ID: apptest.UniqueID("jti"), IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(gateway.EntryJWTTTL)),
			}}
			forged := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
			forged.Header["kid"] = signer.KeyID()
			underGatewayKid, err := forged.SignedString(otherKey)
			if err != nil {
				t.Fatal(err)
			}
			expect("an entry signed by another key under the gateway's kid", direct(shopURL, underGatewayKid), http.StatusForbidden)
			other, err := gateway.ParseSigner(gateway.GenerateKey())
			if err != nil {
				t.Fatal(err)
			}
			underOwnKid, err := other.Sign(gateway.Entry{Issuer: apptest.GatewayPrefix, Audience: front.URL, User: buyer, Queue: "default", Route: "POST /buy", ID: apptest.UniqueID("jti")}, now)
			if err != nil {
				t.Fatal(err)
			}
			expect("an entry signed by another key under its own kid", direct(shopURL, underOwnKid), http.StatusForbidden)

			// 4. Expired: the gateway's key, signed longer ago than an
			// entry lives (and than the examples' 5 s leeway).
			expect("an expired entry", direct(shopURL, sign(buyer, "default", now.Add(-gateway.EntryJWTTTL-time.Minute))), http.StatusForbidden)

			// And what the checks must not refuse, sent the same way: a
			// fresh entry of the gateway's key; and what they also refuse:
			// an entry for another queue, no entry.
			expect("a fresh entry signed by the gateway's key", direct(shopURL, sign(apptest.UniqueID("direct"), "default", now)), http.StatusOK)
			expect("an entry for another queue", direct(shopURL, sign(buyer, "other", now)), http.StatusForbidden)
			expect("no entry", direct(shopURL, ""), http.StatusUnauthorized)

			// With an issuer and an audience of the operator's choosing
			// (--entry-issuer, --entry-audience), the example checks them:
			// entries signed here with the gateway's key, sent to a second
			// instance so configured.
			const iss, aud = "https://shop.example/_waitroom", "https://shop.example"
			strict := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
			apptest.StartExample(t, argv,
				"LISTEN="+strings.TrimPrefix(strict, "http://"),
				"WAITROOM_JWKS_URL="+p.Base+apptest.GatewayPrefix+"/.well-known/jwks.json",
				"WAITROOM_QUEUE=default",
				"WAITROOM_ENTRY_ISSUER="+iss, "WAITROOM_ENTRY_AUDIENCE="+aud,
				"USED_ENTRIES_DB="+filepath.Join(t.TempDir(), "used-entries.db"))
			gatewayKey, err := jwt.ParseEdPrivateKeyFromPEM(p.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			naming := func(issuer string, audience ...string) string {
				t.Helper()
				c := gateway.EntryClaims{Queue: "default", RegisteredClaims: jwt.RegisteredClaims{
					Subject: buyer, ID: apptest.UniqueID("jti"), Issuer: issuer, Audience: audience,
					IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(gateway.EntryJWTTTL)),
				}}
				tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
				tok.Header["kid"] = signer.KeyID()
				h, err := tok.SignedString(gatewayKey)
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			expect("the configured iss and aud", direct(strict, naming(iss, aud)), http.StatusOK)
			expect("another iss", direct(strict, naming("https://evil.example/_waitroom", aud)), http.StatusForbidden)
			expect("another aud", direct(strict, naming(iss, "https://evil.example")), http.StatusForbidden)
			expect("no iss nor aud", direct(strict, naming("")), http.StatusForbidden)
		})
	}
}

// entryRecorder keeps the X-Waitroom-Entry headers the gateway forwarded.
type entryRecorder struct {
	mu      sync.Mutex
	entries []string
}

func (r *entryRecorder) add(entry string) {
	r.mu.Lock()
	r.entries = append(r.entries, entry)
	r.mu.Unlock()
}

func (r *entryRecorder) last(t *testing.T) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) == 0 || r.entries[len(r.entries)-1] == "" {
		t.Fatalf("the gateway forwarded no X-Waitroom-Entry: %q", r.entries)
	}
	return r.entries[len(r.entries)-1]
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
