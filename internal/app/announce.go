package app

// The start told: the log line and the embedded default's banner (announce).

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// announce logs the start, and tells the embedded default's user where
// everything is.
func (m *Main) announce() {
	c, q := m.Config, m.settings.newQueues
	m.Logger.Info("waitroom started", "addr", m.Addr(), "rate", q.RatePerSecond,
		"rate_derivation", q.RateDerivation, "batch", q.BatchSize, "interval", q.Interval,
		"capacity", q.Capacity, "token_ttl", q.TokenTTL, "embedded", c.Embedded())
	if labels := m.served.bypass.Labels(); len(labels) > 0 {
		m.Logger.Info("bypass rules: requests they match pass the line", "rules", labels)
	}
	if c.Proxy {
		m.Logger.Info("gateway", "upstream", c.Upstream, "protect", c.Protect, "protect_session", c.ProtectSession, "prefix", c.Prefix)
	}
	if c.Embedded() {
		m.banner()
	}
}

// banner tells the embedded default's user where everything is, and, for
// serve, hands them a user JWT to try the API with.
func (m *Main) banner() {
	c, w := m.Config, m.Stdout
	if c.Proxy {
		gatewayBanner(w, c, m.Addr(), m.settings.newQueues.RateDerivation)
		return
	}
	command := m.Command
	if command == "" {
		command = "waitroom"
	}
	where := "SQLite in " + c.DataDir
	if c.DatabaseURL != "" {
		where = "PostgreSQL"
	}
	fmt.Fprintf(w, "waitroom is serving the line in process (no Redis) with %s\n", where)
	fmt.Fprintf(w, "  page:        http://%s/\n", m.Addr())
	fmt.Fprintf(w, "  admin:       http://%s/admin\n", m.Addr())
	fmt.Fprintf(w, "  admin token: %s\n", c.AdminToken)
	fmt.Fprintf(w, "  admission:   %s\n", m.settings.newQueues.RateDerivation)
	token, why := command+" token --user alice", "given the same --auth-secret"
	if m.settings.devSecret {
		why = "signed with the secret kept in " + filepath.Join(c.DataDir, DevSecretFile)
		if c.DataDir != DefaultDataDir {
			token += " --data-dir " + c.DataDir
		}
	}
	fmt.Fprintf(w, "  a user JWT:  %s   (%s)\n", token, why)
	fmt.Fprintf(w, "  try it:      curl -X POST %s/api/v1/queues/default/entries -H 'Authorization: Bearer %s'\n",
		m.Addr(), SignUserJWT(c.AuthSecret, c.AuthAudience, c.AuthIssuer, "alice", 24*time.Hour))
}

// gatewayBanner is banner for `waitroom proxy`, listening on addr. Where
// the shop is depends on what stands in front: waitroom's own address
// when nothing does; the public address when a setting names it
// (--entry-issuer, the gateway's public URL: Config.publicBase); and when
// a proxy stands in front (--trusted-proxies: nginx or Caddy asking for
// decisions, a load balancer) but no setting names its address, a plain
// word that the shop is at the proxy's address, never waitroom's own
// port given as the shop's, which would take people past the proxy. The
// admin page stays on waitroom's own address: the operator is beside it.
func gatewayBanner(w io.Writer, c Config, addr, derivation string) {
	fmt.Fprintf(w, "waitroom is guarding %s with the line in process (no Redis)\n", c.Upstream)
	switch public := c.publicBase(); {
	case public != "":
		fmt.Fprintf(w, "  shop:        %s   (its public address, from --entry-issuer)\n", public)
		fmt.Fprintf(w, "  line:        %s%s/\n", public, strings.TrimPrefix(c.Prefix, "/"))
	case c.TrustedProxies != "":
		fmt.Fprintf(w, "  shop:        behind your proxy: open the shop at your proxy's address, not waitroom's own http://%s/\n", addr)
		fmt.Fprintf(w, "               (--entry-issuer, the public URL such as https://shop.example.com%s, would name it here)\n", c.Prefix)
		fmt.Fprintf(w, "  line:        at your proxy's address, under %s/\n", c.Prefix)
	default:
		fmt.Fprintf(w, "  shop:        http://%s/\n", addr)
		fmt.Fprintf(w, "  line:        http://%s%s/\n", addr, c.Prefix)
	}
	fmt.Fprintf(w, "  admin:       http://%s%s/admin (token %s)\n", addr, c.Prefix, c.AdminToken)
	fmt.Fprintf(w, "  admission:   %s\n", derivation)
}
