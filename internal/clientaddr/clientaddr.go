// Package clientaddr tells which address a request came from, believing
// X-Forwarded-For only from proxies the operator named (--trusted-proxies):
// anyone else could write any address there and so get a fresh per-address
// limit on every request.
package clientaddr

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver finds a request's client address.
type Resolver struct {
	trusted []netip.Prefix
}

// Parse reads --trusted-proxies: CIDRs or single addresses, separated by
// commas (empty: trust no proxy, the connection's address is the client).
func Parse(list string) (Resolver, error) {
	var r Resolver
	for part := range strings.SplitSeq(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := ParsePrefix(part)
		if err != nil {
			return Resolver{}, err
		}
		r.trusted = append(r.trusted, p)
	}
	return r, nil
}

// ParsePrefix reads a CIDR (10.0.0.0/8) or a single address, masked.
func ParsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8) nor an address", s)
		}
		p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	}
	return p.Masked(), nil
}

// Trusted reports whether a is one of the trusted proxies.
func (r Resolver) Trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// FromTrusted reports whether req came straight from one of the trusted
// proxies, so that what it says in X-Forwarded-* may be believed.
func (r Resolver) FromTrusted(req *http.Request) bool {
	a := parse(req.RemoteAddr)
	return a.IsValid() && r.Trusted(a)
}

// HTTPS reports whether the client's request came over TLS: to this server,
// or, by the X-Forwarded-Proto of a trusted proxy, to the proxy in front
// (its first value: the hop nearest the client).
func (r Resolver) HTTPS(req *http.Request) bool {
	if req.TLS != nil {
		return true
	}
	if !r.FromTrusted(req) {
		return false
	}
	proto, _, _ := strings.Cut(req.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// Addr is the client's address: the connection's, unless that is a trusted
// proxy; then X-Forwarded-For is read from the right (each proxy appends
// the address it was connected from) and the first address that is not a
// trusted proxy is the client. An entry that is not an address stops the
// walk at the last trusted hop, so a garbled header can only lump clients
// together, never give one a fresh address. The zero Addr when even the
// connection's address cannot be read.
func (r Resolver) Addr(req *http.Request) netip.Addr {
	client := parse(req.RemoteAddr)
	if !client.IsValid() || len(r.trusted) == 0 || !r.Trusted(client) {
		return client
	}
	hops := req.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		list := strings.Split(hops[i], ",")
		for j := len(list) - 1; j >= 0; j-- {
			a := parse(strings.TrimSpace(list[j]))
			if !a.IsValid() {
				return client
			}
			client = a
			if !r.Trusted(a) {
				return a
			}
		}
	}
	return client
}

// parse reads an address, with or without a port ("1.2.3.4:5",
// "[::1]:5"), IPv4-mapped IPv6 as IPv4.
func parse(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}
	}
	return a.WithZone("").Unmap()
}

// Key is what a per-address limit counts by: an IPv4 address, or the /64 an
// IPv6 address is in (one subscriber's network gets a /64, so counting
// single IPv6 addresses would give each of them 2^64 fresh limits).
func Key(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}
