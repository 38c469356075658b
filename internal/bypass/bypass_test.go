package bypass_test

import (
	"errors"
	"io/fs"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/bypass"
	"github.com/waitroom/waitroom/internal/clientaddr"
)

const secret = "s3cret-staff-key-0123456789"

// files is a readFile over a map: "missing" is not there.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		v, ok := m[path]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		}
		return []byte(v), nil
	}
}

func mustParse(t *testing.T, proxies string, specs ...string) *bypass.Rules {
	t.Helper()
	addrs, err := clientaddr.Parse(proxies)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := bypass.Parse(specs, addrs, files(map[string]string{"/run/key": secret + "\n"}))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestParseLabels(t *testing.T) {
	rs := mustParse(t, "", "cidr 10.1.2.3/8", "header x-staff-key="+secret, "header X-Staff-Key=@/run/key queue=sale",
		"cidr 192.0.2.7", "cidr ::ffff:10.0.0.0/104 queue=sale")
	want := []string{"cidr 10.0.0.0/8", "header X-Staff-Key", "header X-Staff-Key queue=sale", "cidr 192.0.2.7/32", "cidr 10.0.0.0/8 queue=sale"}
	if diff := cmp.Diff(want, rs.Labels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"X-Staff-Key"}, rs.Headers()); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"ip 10.0.0.0/8", `unknown kind "ip"`},
		{"cidr", "want 'cidr CIDR'"},
		{"cidr 10.0.0.0/33", "bad CIDR"},
		{"cidr ten", "bad CIDR"},
		{"cidr 10.0.0.0/8 sale", "want queue=NAME"},
		{"cidr 10.0.0.0/8 queue=", "queue="},
		{"cidr 10.0.0.0/8 queue=a/b", "queue=a/b"},
		{"header X-Staff-Key", "missing '='"},
		{"header X-Staff-Key" + secret, "missing '='"},
		{"header X-Staff-Key:" + secret, "missing '='"},
		{"header X-Staff-Key=", "empty value"},
		{"header X-Staff-Key=short", "at least 16"},
		{"header X-Staff-Key=@/missing", "reading the value"},
		{"header X-Staff-Key=@/empty", "empty value in /empty"},
		{"header X-Staff-Key=@/spaced", "white space"},
		{"header X-Staff-Key=" + secret + " more queue=sale", "too many words"},
		{"header =" + secret, "not a header name"},
		{"header X-Staff:Key=" + secret, "not a header name"},
		{"header Authorization=" + secret, "Authorization"},
		{"header x-entry-token=" + secret, "X-Entry-Token"},
		{"header X-Waitroom-User=" + secret, "X-Waitroom-User"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := bypass.Parse([]string{tc.spec}, clientaddr.Resolver{},
				files(map[string]string{"/empty": "\n", "/spaced": " " + secret + "\n"}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
	// Several bad rules: each named.
	_, err := bypass.Parse([]string{"cidr x", "header Y"}, clientaddr.Resolver{}, files(nil))
	if err == nil || !strings.Contains(err.Error(), `"cidr x"`) || !strings.Contains(err.Error(), `"header …"`) {
		t.Errorf("err = %v, want both rules named", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unexpected: %v", err)
	}
}

func TestMatch(t *testing.T) {
	rs := mustParse(t, "127.0.0.1", "cidr 10.0.0.0/8 queue=sale", "header X-Staff-Key=@/run/key")
	for _, tc := range []struct {
		name       string
		remote     string
		headers    map[string]string
		queue      string
		wantLabel  string
		wantBypass bool
	}{
		{"staff header, any queue", "203.0.113.9:1", map[string]string{"X-Staff-Key": secret}, "default", "header X-Staff-Key", true},
		{"wrong value", "203.0.113.9:1", map[string]string{"X-Staff-Key": secret + "x"}, "default", "", false},
		{"a prefix of the value", "203.0.113.9:1", map[string]string{"X-Staff-Key": secret[:20]}, "default", "", false},
		{"another spelling is not the header", "203.0.113.9:1", map[string]string{"X_Staff_Key": secret}, "default", "", false},
		{"office address, its queue", "10.1.2.3:1", nil, "sale", "cidr 10.0.0.0/8 queue=sale", true},
		{"office address, another queue", "10.1.2.3:1", nil, "default", "", false},
		{"office address through the trusted proxy", "127.0.0.1:1", map[string]string{"X-Forwarded-For": "10.9.9.9"}, "sale", "cidr 10.0.0.0/8 queue=sale", true},
		{"a forwarded address from an untrusted peer", "203.0.113.9:1", map[string]string{"X-Forwarded-For": "10.9.9.9"}, "sale", "", false},
		{"any queue asked", "10.1.2.3:1", nil, "", "cidr 10.0.0.0/8 queue=sale", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/buy", nil)
			r.RemoteAddr = tc.remote
			for k, v := range tc.headers {
				r.Header[k] = []string{v}
			}
			label, ok := rs.Match(r, tc.queue)
			if ok != tc.wantBypass || label != tc.wantLabel {
				t.Fatalf("Match = %q, %v; want %q, %v", label, ok, tc.wantLabel, tc.wantBypass)
			}
		})
	}
	var none *bypass.Rules
	if _, ok := none.Match(httptest.NewRequest("GET", "/", nil), "default"); ok {
		t.Error("no rules let a request past")
	}
}
