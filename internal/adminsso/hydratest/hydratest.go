// Package hydratest signs people in to the admin page through a real
// OpenID Connect provider: the Ory Hydra scripts/test.sh builds and starts
// (testenv.Hydra). It registers a client for the waitroom instance under
// test through Hydra's admin API, and is Hydra's login and consent
// screens: a few lines that accept, through the admin API, whoever the
// client was made for, granting `openid email` with the person's e-mail
// (email_verified) and groups in the ID token. Who that is travels in the client's
// metadata, so that the screens keep no state and every test of the
// process shares them and the one Hydra (hydratest.Person per client).
package hydratest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/internal/testenv"
)

// Person is who signs in through a client: the ID token's subject,
// e-mail and groups.
type Person struct {
	Subject string   `json:"subject"`
	Email   string   `json:"email"`
	Groups  []string `json:"groups"`
}

// Client is a client registered at Hydra for one instance.
type Client struct {
	// Issuer is Hydra's issuer URL (--admin-oidc-issuer).
	Issuer string
	// ID and Secret are the client's (--admin-oidc-client-id, and the
	// secret --admin-oidc-client-secret-file holds).
	ID, Secret string
	admin      string
}

// NewClient waits for Hydra, makes sure the login and consent screens
// listen, and registers a client whose sign-ins are who (an authorization
// code client, its secret sent in the token request's Basic
// authorization, Hydra enforcing PKCE). It is deleted when the test ends.
// Its redirect URL is the instance's (AllowRedirect), which is known
// once the instance, which needs the client's id, has started.
func NewClient(t testing.TB, who Person) Client {
	t.Helper()
	h := testenv.Hydra(t)
	screens(t, h)
	var made struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	err := do("POST", h.Admin+"/admin/clients", map[string]any{
		"client_name": "waitroom " + t.Name(), "client_secret": "hydratest-" + rand.Text(),
		"grant_types":    []string{"authorization_code"},
		"response_types": []string{"code"}, "scope": "openid email", "token_endpoint_auth_method": "client_secret_basic",
		"metadata": map[string]any{"hydratest": who},
	}, &made)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", h.Admin+"/admin/clients/"+url.PathEscape(made.ID), nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	})
	return Client{Issuer: h.Public, ID: made.ID, Secret: made.Secret, admin: h.Admin}
}

// AllowRedirect makes redirect (an instance's /admin/sso/callback) the
// client's one redirect URL.
func (c Client) AllowRedirect(t testing.TB, redirect string) {
	t.Helper()
	var out map[string]any
	err := do("PATCH", c.admin+"/admin/clients/"+url.PathEscape(c.ID),
		[]map[string]any{{"op": "replace", "path": "/redirect_uris", "value": []string{redirect}}}, &out)
	if err != nil {
		t.Fatal(err)
	}
}

var (
	screensOnce sync.Once
	screensErr  error
)

// screens starts the login and consent screens on the address Hydra's
// login and consent URLs name, once per test process.
func screens(t testing.TB, h testenv.HydraServer) {
	t.Helper()
	screensOnce.Do(func() {
		l, err := net.Listen("tcp", h.Login)
		if err != nil {
			screensErr = fmt.Errorf("the login and consent screens cannot listen on %s (%s), where Hydra sends people: %w", h.Login, testenv.HydraLoginVar, err)
			return
		}
		m := http.NewServeMux()
		m.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { login(w, r, h.Admin) })
		m.HandleFunc("GET /consent", func(w http.ResponseWriter, r *http.Request) { consent(w, r, h.Admin) })
		go http.Serve(l, m) // for the rest of the process: every test shares it
	})
	if screensErr != nil {
		t.Fatal(screensErr)
	}
}

// request is what Hydra's admin API says of a login or consent request.
type request struct {
	Client struct {
		Metadata struct {
			Who Person `json:"hydratest"`
		} `json:"metadata"`
	} `json:"client"`
	RequestedScope    []string `json:"requested_scope"`
	RequestedAudience []string `json:"requested_access_token_audience"`
}

// login accepts the login request for the client's person.
func login(w http.ResponseWriter, r *http.Request, admin string) {
	challenge := r.URL.Query().Get("login_challenge")
	var req request
	if err := do("GET", admin+"/admin/oauth2/auth/requests/login?login_challenge="+url.QueryEscape(challenge), nil, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	accept(w, r, admin+"/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(challenge),
		map[string]any{"subject": req.Client.Metadata.Who.Subject, "remember": false})
}

// consent grants openid and email (those of them asked for), with the
// person's e-mail, verified (the shop's directory vouches for it), and
// groups in the ID token.
func consent(w http.ResponseWriter, r *http.Request, admin string) {
	challenge := r.URL.Query().Get("consent_challenge")
	var req request
	if err := do("GET", admin+"/admin/oauth2/auth/requests/consent?consent_challenge="+url.QueryEscape(challenge), nil, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	grant := slices.DeleteFunc(req.RequestedScope, func(s string) bool { return s != "openid" && s != "email" })
	who := req.Client.Metadata.Who
	accept(w, r, admin+"/admin/oauth2/auth/requests/consent/accept?consent_challenge="+url.QueryEscape(challenge), map[string]any{
		"grant_scope": grant, "grant_access_token_audience": req.RequestedAudience, "remember": false,
		"session": map[string]any{"id_token": map[string]any{"email": who.Email, "email_verified": true, "groups": who.Groups}},
	})
}

// accept accepts a request and sends the browser where Hydra says.
func accept(w http.ResponseWriter, r *http.Request, u string, body any) {
	var next struct {
		RedirectTo string `json:"redirect_to"`
	}
	if err := do("PUT", u, body, &next); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, next.RedirectTo, http.StatusFound)
}

// do calls Hydra's admin API, decoding a 2xx answer into out.
func do(method, u string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("hydra %s %s: %s: %s", method, u, res.Status, raw)
	}
	return json.Unmarshal(raw, out)
}
