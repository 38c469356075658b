package app

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/waitroom/waitroom/internal/adminsso"
	"github.com/waitroom/waitroom/internal/clientaddr"
	"github.com/waitroom/waitroom/internal/httpapi"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/staff"
)

// AdminOIDC are the admin page's sign-in settings (issue 56): the shop's
// OpenID Connect provider, waitroom's client there, and how the ID
// token's claim names roles.
type AdminOIDC struct {
	Issuer, ClientID, ClientSecretFile string
	RolesClaim, RoleMap                string
}

// adminSignInFlags registers them.
func (c *Config) adminSignInFlags(fs *flag.FlagSet) {
	o := &c.AdminOIDC
	fs.StringVar(&o.Issuer, "admin-oidc-issuer", "", "the shop's OpenID Connect provider (its issuer URL) through which people sign in to the admin page, each with the role its ID token's --admin-oidc-roles-claim names; the client registered there must allow the redirect URL https://<host>/admin/sso/callback (docs/operations.md#signing-in); empty: no sign-in, bearer tokens only")
	fs.StringVar(&o.ClientID, "admin-oidc-client-id", "", "waitroom's client id at the --admin-oidc-issuer")
	fs.StringVar(&o.ClientSecretFile, "admin-oidc-client-secret-file", "", "a file holding the client's secret, its trailing newline dropped (none: a public client, PKCE alone)")
	fs.StringVar(&o.RolesClaim, "admin-oidc-roles-claim", "groups", "the ID token's claim (a string or a list of them) whose values name roles: viewer, operator, admin, or a value --admin-oidc-role-map maps; the highest found wins, and a person with none is refused")
	fs.StringVar(&o.RoleMap, "admin-oidc-role-map", "", "values of the roles claim that stand for a role, as value=role pairs separated by commas (shop-ops=operator,it=admin), for a provider whose groups have the shop's own names; empty: only the roles' own names count")
}

// validateAdminSignIn checks them: an issuer with a client, the secret's
// file readable, the map's roles known.
func (c Config) validateAdminSignIn(bad badSetting) {
	o := c.AdminOIDC
	if o.Issuer == "" {
		if o.ClientID != "" || o.ClientSecretFile != "" || o.RoleMap != "" {
			bad("admin-oidc-issuer", "required with the other --admin-oidc-* settings")
		}
		return
	}
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		bad("admin-oidc-issuer", "%q is not an http(s) URL", o.Issuer)
	}
	if o.ClientID == "" {
		bad("admin-oidc-client-id", "required with --admin-oidc-issuer")
	}
	if o.RolesClaim == "" {
		bad("admin-oidc-roles-claim", "must name a claim")
	}
	if _, err := o.secret(); err != nil {
		bad("admin-oidc-client-secret-file", "%v", err)
	}
	if _, err := o.roleMap(); err != nil {
		bad("admin-oidc-role-map", "%v", err)
	}
}

// secret reads the client's secret ("" without a file).
func (o AdminOIDC) secret() (string, error) {
	if o.ClientSecretFile == "" {
		return "", nil
	}
	raw, err := os.ReadFile(o.ClientSecretFile)
	if err != nil {
		return "", err
	}
	secret := string(bytes.TrimRight(raw, "\r\n"))
	if secret == "" {
		return "", errors.New(o.ClientSecretFile + " is empty")
	}
	return secret, nil
}

// roleMap reads --admin-oidc-role-map.
func (o AdminOIDC) roleMap() (map[string]staff.Role, error) {
	m := map[string]staff.Role{}
	for pair := range strings.SplitSeq(o.RoleMap, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		value, role, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(value) == "" {
			return nil, fmt.Errorf("%q: want value=role", pair)
		}
		r, err := staff.ParseRole(strings.TrimSpace(role))
		if err != nil {
			return nil, err
		}
		m[strings.TrimSpace(value)] = r
	}
	return m, nil
}

// origin is the provider's origin: the admin page offers sign-in when
// there is one ("" without sign-in).
func (o AdminOIDC) origin() string {
	u, err := url.Parse(o.Issuer)
	if o.Issuer == "" || err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// adminSignIn builds the admin page's sign-in (nil without
// --admin-oidc-issuer), its sessions kept by the line's store.
func (m *Main) adminSignIn(id *identity.Identity, proxies clientaddr.Resolver) (*adminsso.SignIn, error) {
	o := m.Config.AdminOIDC
	if o.Issuer == "" {
		return nil, nil
	}
	secret, err := o.secret() // read again: the file may have changed since Validate
	if err != nil {
		return nil, fmt.Errorf("--admin-oidc-client-secret-file: %w", err)
	}
	roles, err := o.roleMap()
	if err != nil {
		return nil, fmt.Errorf("--admin-oidc-role-map: %w", err)
	}
	var sessions staff.SessionStore = m.line.embedded
	if m.line.embedded == nil {
		sessions = redisstore.New(m.line.redis, m.Config.KeyPrefix)
	}
	return adminsso.New(adminsso.Options{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: secret,
		RolesClaim: o.RolesClaim, RoleMap: roles, Sessions: sessions, Secure: id.Secure, Proxies: proxies,
		Base: m.Config.prefix(), Now: m.Clock, Logger: m.Logger.With("part", "admin-sign-in")})
}

// sessionAuth and signInRoutes are the sign-in as httpapi takes it (nil
// interfaces without one).
func sessionAuth(s *adminsso.SignIn) httpapi.SessionAuth {
	if s == nil {
		return nil
	}
	return s
}

func signInRoutes(s *adminsso.SignIn) httpapi.AdminSignIn {
	if s == nil {
		return nil
	}
	return s
}
