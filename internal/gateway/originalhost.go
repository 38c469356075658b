package gateway

import "net/http"

// The Host a decision is asked with. Go's server refuses a request whose
// Host it cannot read (none in HTTP/1.1, "a@shop.test") before any handler
// runs, with 400; nginx's auth_request understands only 2xx, 401 and 403,
// and made of that 400 its own 500, which the shipped configuration reads
// as "waitroom away" (issue 50). So the shipped nginx configuration asks
// with this Host, which Go's server always accepts, and carries the
// client's in X-Original-Host, set by the configuration itself (a client's
// never reaches the decision; nginx sends none for a request that had
// none). The decision then refuses a Host `waitroom proxy` would refuse
// (validHost), which for nginx is 401: error_page hands the request to
// `waitroom proxy`, which answers it with Go's own 400.
//
// The name has capitals, compared as they are, because nginx lowercases
// $host: a configuration written before X-Original-Host, which sends the
// client's $host as the Host and passes on a client's X-Original-Host,
// can never ask with it, so a client sending "Host: waitroom-decision"
// and an X-Original-Host of its choosing through such a configuration
// still has its own Host judged (under --hosts distinct, another host's
// routes would have been the ones checked).
const (
	DecisionHost       = "Waitroom-Decision"
	HeaderOriginalHost = "X-Original-Host"
)

// nginxHost is the original request's host as nginx carries it: in
// X-Original-Host when asked with DecisionHost, exactly ("" when the
// client sent none), else the Host itself (a configuration written before
// X-Original-Host, which sent the client's $host as the Host).
func nginxHost(r *http.Request) string {
	if r.Host != DecisionHost {
		return r.Host
	}
	return r.Header.Get(HeaderOriginalHost)
}

// validHost: a Host Go's server reads (the bytes of x/net's
// httpguts.ValidHostHeader: a name, an address, a port, an IPv6 literal
// with its zone), so that a decision refuses what `waitroom proxy` itself
// would never have been handed.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; !unreserved(c) && !isHostMark(c) {
			return false
		}
	}
	return true
}

// isHostMark: the sub-delims, ":", "[", "]" and "%" a Host may hold.
func isHostMark(c byte) bool {
	switch c {
	case '!', '$', '%', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '[', ']':
		return true
	}
	return false
}
