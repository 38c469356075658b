package clientaddr

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestAddr(t *testing.T) {
	t.Parallel()
	none, _ := Parse("")
	lb, err := Parse("10.0.0.0/8, 192.0.2.7 ,2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		r        Resolver
		remote   string
		xff      []string
		want     string
		wantKey  string
		wantZero bool
	}{
		{"no proxy trusted: the header is ignored", none, "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5", "203.0.113.5", false},
		{"an untrusted sender's header is ignored", lb, "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5", "", false},
		{"from a trusted proxy: its client", lb, "10.1.2.3:4000", []string{"198.51.100.1"}, "198.51.100.1", "", false},
		{"the right-most untrusted hop, not what the client wrote", lb, "10.1.2.3:4000",
			[]string{"1.1.1.1, 198.51.100.1, 192.0.2.7"}, "198.51.100.1", "", false},
		{"several headers read as one list", lb, "10.1.2.3:4000", []string{"1.1.1.1", "198.51.100.2, 10.9.9.9"}, "198.51.100.2", "", false},
		{"every hop trusted: the left-most", lb, "10.1.2.3:4000", []string{"10.0.0.1, 10.0.0.2"}, "10.0.0.1", "", false},
		{"garbage stops at the last trusted hop", lb, "10.1.2.3:4000", []string{"198.51.100.9, nonsense, 10.0.0.2"}, "10.0.0.2", "", false},
		{"no header from a trusted proxy: the proxy", lb, "10.1.2.3:4000", nil, "10.1.2.3", "", false},
		{"ports and brackets", lb, "10.1.2.3:4000", []string{"[2a00:1450::1]:443"}, "2a00:1450::1", "2a00:1450::/64", false},
		{"IPv4-mapped IPv6 is IPv4", lb, "[::ffff:10.1.2.3]:4000", []string{"::ffff:198.51.100.3"}, "198.51.100.3", "198.51.100.3", false},
		{"an IPv6 client counts by its /64", none, "[2a00:1450:4001:81c::200e]:4000", nil, "2a00:1450:4001:81c::200e", "2a00:1450:4001:81c::/64", false},
		{"unreadable remote address", none, "nonsense", nil, "", "unknown", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = c.remote
			for _, v := range c.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			got := c.r.Addr(req)
			if c.wantZero {
				if got.IsValid() {
					t.Fatalf("Addr = %v, want none", got)
				}
			} else if got != netip.MustParseAddr(c.want) {
				t.Fatalf("Addr = %v, want %s", got, c.want)
			}
			if c.wantKey != "" && Key(got) != c.wantKey {
				t.Fatalf("Key = %q, want %q", Key(got), c.wantKey)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.0/8,,nope"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
