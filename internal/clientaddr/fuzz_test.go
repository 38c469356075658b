package clientaddr

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// FuzzForwardedFor feeds arbitrary X-Forwarded-For values from a trusted
// proxy: the address found is either the proxy's own or one written in
// the header, never one made up, and an untrusted sender's header is never
// believed.
func FuzzForwardedFor(f *testing.F) {
	for _, s := range []string{"198.51.100.1", "1.1.1.1, 198.51.100.1, 10.0.0.2", "", ",", "nonsense", "[::1]:80",
		"2001:db8::1%eth0", "::ffff:1.2.3.4", " 198.51.100.1 ,", "10.0.0.1, 10.0.0.2"} {
		f.Add(s)
	}
	r, _ := Parse("10.0.0.0/8")
	f.Fuzz(func(t *testing.T, xff string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "10.1.2.3:4000"
		req.Header["X-Forwarded-For"] = []string{xff}
		got := r.Addr(req)
		if !got.IsValid() {
			t.Fatalf("Addr(%q) found no address", xff)
		}
		if got != netip.MustParseAddr("10.1.2.3") && !strings.Contains(xff, strings.Trim(got.String(), "[]")) {
			found := false
			for part := range strings.SplitSeq(xff, ",") {
				if parse(strings.TrimSpace(part)) == got {
					found = true
				}
			}
			if !found {
				t.Fatalf("Addr(%q) = %v: in neither the connection nor the header", xff, got)
			}
		}
		Key(got) // must not panic
		req.RemoteAddr = "203.0.113.5:4000"
		if got := r.Addr(req); got != netip.MustParseAddr("203.0.113.5") {
			t.Fatalf("an untrusted sender's header was believed: %v", got)
		}
	})
}
