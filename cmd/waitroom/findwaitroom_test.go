package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/apptest"
)

// TestAdminCommandsAtTheGatewaysRoot: `waitroom sold-out` pointed at a
// gateway's root (issue 49: the token went to the shop's backend, which
// answered 404) finds waitroom under the gateway's prefix, says so, and
// sends the token there only: the backend sees none of it.
func TestAdminCommandsAtTheGatewaysRoot(t *testing.T) {
	s := apptest.NewUpstreamShop(t, 10)
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, s, nil)
	var out, errOut bytes.Buffer
	err := stock("sold-out", []string{"--addr", p.Base, "--queue", "default", "--admin-token", p.AdminToken}, env(nil), &out, &errOut)
	if err != nil || out.String() != "default: sold out (0 units left)\n" {
		t.Fatalf("sold-out at the gateway's root: %v, %q %s", err, out.String(), errOut.String())
	}
	if want := "using " + p.Base + apptest.GatewayPrefix; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want a note %q", errOut.String(), want)
	}
	if st := p.Do("GET", apptest.GatewayPrefix+"/admin/v1/queues/default", p.AdminAuth(), nil); st.Body["soldOut"] != true {
		t.Errorf("the queue after sold-out: %s", st.Raw)
	}
	for _, call := range s.Seen() {
		for k, vs := range call.Header {
			if strings.Contains(strings.Join(vs, " "), p.AdminToken) {
				t.Errorf("%s %s: the backend got the admin token in %s", call.Method, call.Path, k)
			}
		}
	}
}

// TestAdminCommandsRefuseAnotherServer: at an address that does not answer
// GET /healthz as waitroom (a plain backend: 404, a health answer of its
// own, a redirect), the admin commands stop, naming the prefix, and no
// request carries the token.
func TestAdminCommandsRefuseAnotherServer(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		want   string // in the error, beside the prefix
	}{
		{"404", http.NotFound, "answered 404 Not Found"},
		{"a health answer of its own", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"ok"}`))
		}, "without naming the service waitroom"},
		{"a redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://shop.example"+r.URL.Path, http.StatusMovedPermanently)
		}, "to https://shop.example/healthz (not followed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				asked = append(asked, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
				mu.Unlock()
				tt.answer(w, r)
			}))
			defer backend.Close()
			for _, run := range []func(args []string, stdout, stderr *bytes.Buffer) error{
				func(args []string, stdout, stderr *bytes.Buffer) error {
					return stock("restock", args, env(nil), stdout, stderr)
				},
				func(args []string, stdout, stderr *bytes.Buffer) error {
					return reportCmd(append(args, "--out", "-"), env(nil), time.Now(), stdout, stderr)
				},
			} {
				var out, errOut bytes.Buffer
				err := run([]string{"--addr", backend.URL, "--queue", "default", "--admin-token", "s3cret-admin-token"}, &out, &errOut)
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				for _, want := range []string{tt.want, "is --addr the gateway? add its prefix: " + backend.URL + "/_waitroom", "the admin token was not sent"} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q, want it to name %q", msg, want)
					}
				}
				if out.Len() > 0 {
					t.Errorf("printed %q", out.String())
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, a := range asked {
				if !strings.HasSuffix(a, "/healthz ") {
					t.Errorf("the backend was asked %q: only GET …/healthz, without a token", a)
				}
			}
		})
	}
}
