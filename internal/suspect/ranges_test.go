package suspect

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRangesFormats(t *testing.T) {
	tests := []struct {
		file    string
		in, out []string
		len     int
	}{
		{
			file: "plain.txt",
			in: []string{"203.0.113.0", "203.0.113.255", "192.0.2.0", "192.0.2.127", "192.0.2.128", "192.0.2.255",
				"198.18.7.9", "2001:db8:a::", "2001:db8:a:ffff:ffff:ffff:ffff:ffff", "2001:db8:b::1", "::ffff:203.0.113.7"},
			out: []string{"203.0.112.255", "203.0.114.0", "192.0.1.255", "192.0.3.0", "198.18.7.8", "198.18.7.10",
				"2001:db8:9:ffff:ffff:ffff:ffff:ffff", "2001:db8:b::", "2001:db8:b::2", "::ffff:203.0.114.0"},
			len: 5, // the two halves of 192.0.2.0/24 are one interval
		},
		{
			file: "aws-ip-ranges.json",
			// 198.51.100.2/24 is published with host bits: it means
			// 198.51.100.0/24, and touches 198.51.101.0/24.
			in:  []string{"3.2.34.0", "3.2.34.63", "198.51.100.0", "198.51.101.255", "2600:1f14::1", "2600:1f14:1fff:ffff:ffff:ffff:ffff:ffff"},
			out: []string{"3.2.34.64", "198.51.99.255", "198.51.102.0", "2600:1f13:ffff::", "2600:1f14:2000::", "2600:1f15::"},
			len: 3,
		},
		{
			file: "google-cloud.json",
			in:   []string{"34.80.0.0", "34.81.255.255", "35.185.128.1", "2600:1900:4030::5", "2600:1900:403f:ffff::"},
			out:  []string{"34.79.255.255", "34.82.0.0", "35.185.160.0", "2600:1900:4040::"},
			len:  3,
		},
		{
			file: "azure-servicetags.json",
			in:   []string{"20.42.127.255", "40.71.3.4", "2603:1030:211::", "13.64.39.16", "13.66.138.93"},
			out:  []string{"20.42.128.0", "13.64.39.17", "13.66.138.94", "2603:1030:212::"},
			len:  5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := NewRanges([]string{filepath.Join("testdata", tt.file)})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tt.in {
				if !r.Contains(netip.MustParseAddr(a)) {
					t.Errorf("Contains(%s) = false, want true", a)
				}
			}
			for _, a := range tt.out {
				if r.Contains(netip.MustParseAddr(a)) {
					t.Errorf("Contains(%s) = true, want false", a)
				}
			}
			if got := r.Len(); got != tt.len {
				t.Errorf("Len() = %d, want %d", got, tt.len)
			}
		})
	}
}

func TestRangesMergeAndEdges(t *testing.T) {
	path := writeFile(t, "ranges.txt", strings.Join([]string{
		"10.0.0.0/8",
		"10.1.0.0/16",  // inside the /8
		"11.0.0.0/9",   // touches the /8's end: one interval
		"11.64.0.0/10", // overlaps the /9's end
		"12.0.0.1",     // a single address, apart
		"255.255.255.0/24",
		"::ffff:100.64.0.0/106", // IPv4-mapped: kept as 100.64.0.0/10
		"fe80::/10",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120", // covers the /124
	}, "\n"))
	r, err := NewRanges([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr string
		want bool
	}{
		{"9.255.255.255", false},
		{"10.0.0.0", true},
		{"11.127.255.255", true},
		{"11.128.0.0", false},
		{"12.0.0.0", false},
		{"12.0.0.1", true},
		{"12.0.0.2", false},
		{"255.255.255.255", true},
		{"0.0.0.0", false},
		{"100.64.0.1", true},
		{"::ffff:100.127.255.255", true},
		{"100.128.0.0", false},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"fec0::", false},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:feff", false},
		{"::", false},
	}
	for _, tt := range tests {
		if got := r.Contains(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Contains(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	// 10/8+11/9+11.64/10 → one; 12.0.0.1; 255.255.255/24; 100.64/10;
	// fe80::/10; the top /120.
	if got := r.Len(); got != 6 {
		t.Errorf("Len() = %d, want 6", got)
	}
	if r.Contains(netip.Addr{}) {
		t.Error("the zero Addr is contained")
	}
}

func TestRangesByteOrderMark(t *testing.T) {
	for name, content := range map[string]string{
		"plain": "\ufeff203.0.113.0/24\n",
		"json":  "\ufeff{\"prefixes\":[{\"ip_prefix\":\"203.0.113.0/24\"}]}",
	} {
		r, err := NewRanges([]string{writeFile(t, name, content)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !r.Contains(netip.MustParseAddr("203.0.113.9")) {
			t.Errorf("%s: the first range was lost", name)
		}
	}
}

func TestRangesWholeSpaces(t *testing.T) {
	r, err := NewRanges([]string{writeFile(t, "all.txt", "::/0\n")})
	if err != nil {
		t.Fatal(err)
	}
	// ::/0 covers ::ffff:0:0/96, so every IPv4 address as well.
	for _, a := range []string{"0.0.0.0", "8.8.8.8", "255.255.255.255", "::", "2001:db8::1"} {
		if !r.Contains(netip.MustParseAddr(a)) {
			t.Errorf("::/0 does not contain %s", a)
		}
	}
	empty, err := NewRanges(nil)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Contains(netip.MustParseAddr("8.8.8.8")) || empty.Len() != 0 {
		t.Error("an empty set contains something")
	}
	var none *Ranges
	if none.Contains(netip.MustParseAddr("8.8.8.8")) || none.Len() != 0 {
		t.Error("a nil set contains something")
	}
}

func TestRangesErrorsNameTheFault(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"plain", "10.0.0.0/8\n# fine\n\n10.0.0.0/33\n", "bad.txt:4: "},
		{"plain word", "10.0.0.0/8\nexample.com\n", "bad.txt:2: "},
		{"aws", `{"prefixes":[{"ip_prefix":"3.2.34.0/26"},{"ip_prefix":"3.2.34/26"}]}`, "bad.txt: prefixes[1].ip_prefix: "},
		{"aws v6", `{"prefixes":[],"ipv6_prefixes":[{"ipv6_prefix":"2600:zz::/35"}]}`, "bad.txt: ipv6_prefixes[0].ipv6_prefix: "},
		{"google", `{"prefixes":[{"ipv4Prefix":"34.80.0.0/15"},{"service":"Google Cloud"}]}`, "bad.txt: prefixes[1]: "},
		{"azure", `{"values":[{"properties":{"addressPrefixes":["20.42.0.0/17"]}},{"properties":{"addressPrefixes":["x"]}}]}`,
			"bad.txt: values[1].properties.addressPrefixes[0]: "},
		{"json syntax", "{\n  \"prefixes\": [\n    {\"ip_prefix\": \"3.2.34.0/26\"},,\n  ]\n}", "bad.txt:3: "},
		{"json type", "{\n\"prefixes\": [{\"ip_prefix\": 7}]}", "bad.txt:2: "},
		{"unknown shape", `{"addresses":["10.0.0.0/8"]}`, "no known shape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRanges([]string{writeFile(t, "bad.txt", tt.content)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := NewRanges([]string{filepath.Join(t.TempDir(), "missing.txt")}); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("a missing file: err = %v", err)
	}
}

func TestRangesReloadSwapsOrKeeps(t *testing.T) {
	plain := writeFile(t, "a.txt", "203.0.113.0/24\n")
	aws := writeFile(t, "b.json", `{"prefixes":[{"ip_prefix":"198.51.100.0/24"}],"ipv6_prefixes":[]}`)
	r, err := NewRanges([]string{plain, aws})
	if err != nil {
		t.Fatal(err)
	}
	in := func(a string) bool { return r.Contains(netip.MustParseAddr(a)) }
	if !in("203.0.113.1") || !in("198.51.100.1") || in("192.0.2.1") {
		t.Fatal("the first load is wrong")
	}

	// A good reload replaces the whole set: the old range is gone.
	writeAt(t, plain, "192.0.2.0/24\n")
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if in("203.0.113.1") || !in("192.0.2.1") || !in("198.51.100.1") {
		t.Fatal("the reload did not swap the set")
	}

	// A bad second file: the error names it, and both files' old ranges
	// stay in force although the first file read well.
	writeAt(t, plain, "233.252.0.0/24\n")
	writeAt(t, aws, `{"prefixes":[{"ip_prefix":"198.51.100.0/24"},{"ip_prefix":"nope"}]}`)
	err = r.Reload()
	if err == nil || !strings.Contains(err.Error(), "b.json: prefixes[1].ip_prefix") {
		t.Fatalf("Reload of a bad file: err = %v", err)
	}
	if !in("192.0.2.1") || in("233.252.0.1") || !in("198.51.100.1") {
		t.Fatal("a failed reload changed the set")
	}
}

// TestRangesConcurrentReload runs lookups beside reloads (under -race):
// a lookup sees either set whole, never a mix.
func TestRangesConcurrentReload(t *testing.T) {
	path := writeFile(t, "r.txt", "10.0.0.0/8\n")
	r, err := NewRanges([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Both sets hold 10.1.2.3; neither holds 11.0.0.1.
				if !r.Contains(netip.MustParseAddr("10.1.2.3")) || r.Contains(netip.MustParseAddr("11.0.0.1")) {
					t.Error("a lookup saw a set half swapped")
					return
				}
			}
		})
	}
	for i := range 50 {
		writeAt(t, path, fmt.Sprintf("10.0.0.0/8\n172.16.%d.0/24\n", i))
		if err := r.Reload(); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

func FuzzRangesFile(f *testing.F) {
	for _, name := range []string{"plain.txt", "aws-ip-ranges.json", "google-cloud.json", "azure-servicetags.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("::ffff:1.2.3.4/100\n0.0.0.0/0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := NewRanges([]string{path})
		if err != nil {
			return
		}
		// Whatever loaded is sorted and merged: each interval ends before
		// the next starts, with a gap between.
		s := r.set.Load()
		for i := 1; i < len(s.v4); i++ {
			if s.v4[i-1].hi >= s.v4[i].lo-1 || s.v4[i].lo > s.v4[i].hi {
				t.Fatalf("v4 intervals %v, %v", s.v4[i-1], s.v4[i])
			}
		}
		for i := 1; i < len(s.v6); i++ {
			if after, _ := s.v6[i-1].hi.next(); after.cmp(s.v6[i].lo) >= 0 || s.v6[i].lo.cmp(s.v6[i].hi) > 0 {
				t.Fatalf("v6 intervals %v, %v", s.v6[i-1], s.v6[i])
			}
		}
	})
}

// awsShaped writes an ip-ranges.json of n distinct /24s and /48s, as AWS
// publishes them (every entry with its region, service and border group).
func awsShaped(tb testing.TB, n int) string {
	type v4 struct {
		IPPrefix string `json:"ip_prefix"`
		Region   string `json:"region"`
		Service  string `json:"service"`
		Border   string `json:"network_border_group"`
	}
	type v6 struct {
		IPv6Prefix string `json:"ipv6_prefix"`
		Region     string `json:"region"`
		Service    string `json:"service"`
		Border     string `json:"network_border_group"`
	}
	doc := struct {
		SyncToken  string `json:"syncToken"`
		CreateDate string `json:"createDate"`
		Prefixes   []v4   `json:"prefixes"`
		IPv6       []v6   `json:"ipv6_prefixes"`
	}{SyncToken: "1733443202", CreateDate: "2026-12-06-00-00-02"}
	for i := range n {
		if i%4 == 3 {
			doc.IPv6 = append(doc.IPv6, v6{fmt.Sprintf("2600:%x:%x::/48", 0x1f00+i>>16, i&0xffff), "us-east-1", "EC2", "us-east-1"})
			continue
		}
		// Every other /24, so that few merge and the set stays n long.
		doc.Prefixes = append(doc.Prefixes, v4{fmt.Sprintf("%d.%d.%d.0/24", 3+i>>15, i>>7&0xff, i<<1&0xff), "us-east-1", "AMAZON", "us-east-1"})
	}
	data, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "ip-ranges.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkLoadAWS100k loads an AWS-shaped file of 100,000 CIDRs (the
// issue asks for under a second).
func BenchmarkLoadAWS100k(b *testing.B) {
	path := awsShaped(b, 100_000)
	for b.Loop() {
		r, err := NewRanges([]string{path})
		if err != nil {
			b.Fatal(err)
		}
		if r.Len() != 100_000 {
			b.Fatalf("Len() = %d, want 100000", r.Len())
		}
	}
}

// BenchmarkContains100k looks addresses up in 100,000 ranges, in parallel
// as the instance's handlers do.
func BenchmarkContains100k(b *testing.B) {
	r, err := NewRanges([]string{awsShaped(b, 100_000)})
	if err != nil {
		b.Fatal(err)
	}
	addrs := make([]netip.Addr, 1024)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{byte(3 + i%3), byte(i * 7), byte(i * 13), 1})
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Contains(addrs[i%len(addrs)])
			i++
		}
	})
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	writeAt(t, path, content)
	return path
}

func writeAt(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
