package repolint_test

// The HTTP contract, openapi.yaml, held against the real program: every
// route and every status the document lists for it is driven through a
// booted waitroom on both backends; each request is checked against the
// document (valid, or refused by the document and by the server alike) and
// each answer is validated against it. A documented (method, path, status)
// that no request produced fails the test, and so does a route the server
// registers that the document does not describe.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/accesscode"
	"github.com/waitroom/waitroom/internal/app"
	"github.com/waitroom/waitroom/internal/apptest"
	"github.com/waitroom/waitroom/internal/identity"
	"github.com/waitroom/waitroom/internal/queue/redisstore"
	"github.com/waitroom/waitroom/internal/suspect"
	"github.com/waitroom/waitroom/internal/testenv"
)

func init() {
	// Media types the document uses that kin-openapi has no decoder for.
	for _, mt := range []string{"text/html", "text/css", "text/javascript", "image/svg+xml", "application/openmetrics-text"} {
		openapi3filter.RegisterBodyDecoder(mt, openapi3filter.PlainBodyDecoder)
	}
}

// oaMethodsNotAllowed is the path-level extension that lists the methods a
// path does not serve, the Allow header they get and their answer (a 405):
// the contract of those answers, kept out of the operations so that
// generated clients have no method that can only fail.
const oaMethodsNotAllowed = "x-methods-not-allowed"

// oaNotAllowed is one path's x-methods-not-allowed.
type oaNotAllowed struct {
	Methods  []string `json:"methods"`
	Allow    string   `json:"allow"`
	Response struct {
		Ref string `json:"$ref"`
	} `json:"response"`
}

// oaMethods are the methods a path either serves or refuses in its
// x-methods-not-allowed; HEAD, OPTIONS and TRACE follow the prose rules.
var oaMethods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch}

// oaGateway marks the operations only gateway mode serves, under its prefix.
const oaGateway = "x-waitroom-gateway"

// oaAnswer is one documented (or produced) answer: method, path template, status.
type oaAnswer struct {
	method, path string
	status       int
}

func (tr oaAnswer) String() string { return fmt.Sprintf("%s %s → %d", tr.method, tr.path, tr.status) }

// oaContract is the loaded document.
type oaContract struct {
	doc    *openapi3.T
	router routers.Router
	want   map[oaAnswer]bool // every documented status, "default" left out
	// notAllowed is each path's x-methods-not-allowed, and methodNotAllowed
	// the answer it names.
	notAllowed       map[string]oaNotAllowed
	methodNotAllowed *openapi3.ResponseRef
}

func loadOpenAPI(t *testing.T) *oaContract {
	t.Helper()
	onDisk, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, waitroom.OpenAPI) {
		t.Fatal("the embedded OpenAPI document differs from openapi.yaml (rebuild)")
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(waitroom.OpenAPI)
	if err != nil {
		t.Fatalf("loading openapi.yaml: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Fatalf("openapi: %q, want 3.0.3", doc.OpenAPI)
	}
	// Route by path alone: the document's server is "/", wherever it runs.
	routed := *doc
	routed.Servers = nil
	router, err := legacy.NewRouter(&routed)
	if err != nil {
		t.Fatalf("routing openapi.yaml: %v", err)
	}
	c := &oaContract{doc: doc, router: router, want: map[oaAnswer]bool{}, notAllowed: map[string]oaNotAllowed{}}
	for path, item := range doc.Paths.Map() {
		if len(item.Operations()) == 0 {
			t.Fatalf("%s has no operation", path)
		}
		c.notAllowed[path] = c.loadNotAllowed(t, path, item)
		for _, method := range c.notAllowed[path].Methods {
			c.want[oaAnswer{method, path, http.StatusMethodNotAllowed}] = true
		}
		for method, op := range item.Operations() {
			// What generators and linters need of every operation (redocly
			// lint checks the same, where it runs).
			if op.OperationID == "" || op.Summary == "" || op.Security == nil || op.Responses.Default() == nil {
				t.Errorf("%s %s: operationId %q, summary %q, security %v, default answer %v: every operation needs all four",
					method, path, op.OperationID, op.Summary, op.Security, op.Responses.Default() != nil)
			}
			for code := range op.Responses.Map() {
				if code == "default" {
					continue
				}
				n, err := strconv.Atoi(code)
				if err != nil {
					t.Fatalf("%s %s: response %q is not a status code", method, path, code)
				}
				c.want[oaAnswer{method, path, n}] = true
			}
		}
	}
	return c
}

// loadNotAllowed reads and checks a path's x-methods-not-allowed: it lists
// exactly the methods the path does not serve, names the Allow header the
// server sends with them, and the 405 answer.
func (c *oaContract) loadNotAllowed(t *testing.T, path string, item *openapi3.PathItem) oaNotAllowed {
	t.Helper()
	var na oaNotAllowed
	raw, err := json.Marshal(item.Extensions[oaMethodsNotAllowed])
	if err == nil {
		err = json.Unmarshal(raw, &na)
	}
	if err != nil || item.Extensions[oaMethodsNotAllowed] == nil {
		t.Fatalf("%s: %s missing or not {methods, allow, response}: %v", path, oaMethodsNotAllowed, err)
	}
	var unserved []string
	for _, m := range oaMethods {
		if item.GetOperation(m) == nil {
			unserved = append(unserved, m)
		}
	}
	if !slices.Equal(na.Methods, unserved) {
		t.Errorf("%s: %s lists %v; the methods it does not serve are %v", path, oaMethodsNotAllowed, na.Methods, unserved)
	}
	if want := strings.Join(c.served(path), ", "); na.Allow != want {
		t.Errorf("%s: %s says Allow %q; the operations make it %q", path, oaMethodsNotAllowed, na.Allow, want)
	}
	const prefix = "#/components/responses/"
	ref := c.doc.Components.Responses[strings.TrimPrefix(na.Response.Ref, prefix)]
	if !strings.HasPrefix(na.Response.Ref, prefix) || ref == nil {
		t.Fatalf("%s: %s names the answer %q, which is no response of the document", path, oaMethodsNotAllowed, na.Response.Ref)
	}
	if c.methodNotAllowed != nil && c.methodNotAllowed != ref {
		t.Errorf("%s: %s names another 405 answer than the other paths", path, oaMethodsNotAllowed)
	}
	c.methodNotAllowed = ref
	return na
}

// gatewayOnly reports whether the path is served in gateway mode only: its
// operations are (and so its 405s).
func (c *oaContract) gatewayOnly(path string) bool {
	item := c.doc.Paths.Value(path)
	if item == nil {
		return false
	}
	for _, op := range item.Operations() {
		if op.Extensions[oaGateway] != nil {
			return true
		}
	}
	return false
}

// served is the methods the document says path serves, as the server's
// Allow header lists them (sorted; GET brings HEAD).
func (c *oaContract) served(path string) []string {
	var ms []string
	for method := range c.doc.Paths.Value(path).Operations() {
		ms = append(ms, method)
		if method == http.MethodGet {
			ms = append(ms, http.MethodHead)
		}
	}
	sort.Strings(ms)
	return ms
}

// findRoute is the route of req: its operation, or, for a method its path
// lists in x-methods-not-allowed, an operation that answers only the
// document's 405, for validating request and answer as any other.
func (c *oaContract) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := c.router.FindRoute(req)
	if err == nil && oaWholePath(route, params) {
		return route, params, nil
	}
	for _, m := range oaMethods {
		probe := req.Clone(req.Context())
		probe.Method = m
		found, params, perr := c.router.FindRoute(probe)
		if perr != nil || !oaWholePath(found, params) {
			continue
		}
		if !slices.Contains(c.notAllowed[found.Path].Methods, req.Method) {
			break
		}
		r := *found
		r.Method = req.Method
		r.Operation = &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(http.StatusMethodNotAllowed, c.methodNotAllowed))}
		return &r, params, nil
	}
	if err == nil {
		err = errors.New("no operation and no x-methods-not-allowed entry")
	}
	return nil, nil, err
}

// oaWholePath reports whether the router matched every parameter of the
// path: the legacy router answers PUT /admin/v1/products with the route of
// PUT /admin/v1/products/{id}, id missing.
func oaWholePath(route *routers.Route, params map[string]string) bool {
	for _, seg := range strings.Split(route.Path, "/") {
		if strings.HasPrefix(seg, "{") && params[strings.Trim(seg, "{}")] == "" {
			return false
		}
	}
	return true
}

// oaCase is one request and the answer it must get.
type oaCase struct {
	method, path string
	auth         string   // the Authorization header
	cookie       string   // the Cookie header
	body         any      // nil, a string (sent as is) or a value sent as JSON
	headers      []string // more header pairs
	status       int      // the answer's status
	code         string   // the answer's error code, when it is an error
	// specInvalid: the request breaks the document on purpose (a bad body,
	// a name the document's pattern refuses); the document must refuse it
	// too. Otherwise it must pass request validation.
	specInvalid bool
}

// oaChecker sends requests to one instance and holds them and their answers
// against the contract, recording which documented answers were produced.
type oaChecker struct {
	c   *oaContract
	in  *apptest.Instance
	hit *oaHits
	// prefix is where the API lives on the instance: "" for serve, the
	// gateway's prefix for proxy. The document's paths are without it.
	prefix string
}

// oaHits is a set of produced answers, safe for concurrent use.
type oaHits struct {
	mu  sync.Mutex
	set map[oaAnswer]bool
}

func newOAHits() *oaHits { return &oaHits{set: map[oaAnswer]bool{}} }

func (h *oaHits) add(tr oaAnswer) {
	h.mu.Lock()
	h.set[tr] = true
	h.mu.Unlock()
}

func (h *oaHits) has(tr oaAnswer) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.set[tr]
}

var oaRequestSeq atomic.Int64

// call sends c and checks request and answer against the contract; it
// returns the answer.
func (k *oaChecker) call(t *testing.T, c oaCase) apptest.Response {
	t.Helper()
	var body []byte
	switch b := c.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	reqID := fmt.Sprintf("oa-%d", oaRequestSeq.Add(1))
	build := func(prefix string) *http.Request {
		var rd io.Reader
		if c.body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(c.method, k.in.Base+prefix+c.path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if c.body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if c.cookie != "" {
			req.Header.Set("Cookie", c.cookie)
		}
		req.Header.Set("X-Request-Id", reqID)
		for i := 0; i+1 < len(c.headers); i += 2 {
			req.Header.Set(c.headers[i], c.headers[i+1])
		}
		return req
	}
	name := c.method + " " + c.path
	if len(name) > 100 {
		name = name[:100] + "…"
	}

	// The request, as the document sees it.
	vreq := build("")
	route, params, err := k.c.findRoute(vreq)
	if err != nil {
		t.Fatalf("%s: not in openapi.yaml: %v", name, err)
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			// Identity is exercised for real: the document only has to
			// name the schemes, the server decides.
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			MultiError:         true,
		},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	switch {
	case c.specInvalid && reqErr == nil:
		t.Errorf("%s: the document accepts a request the test breaks on purpose", name)
	case !c.specInvalid && reqErr != nil:
		t.Errorf("%s: the document refuses the request: %v", name, reqErr)
	}

	// The answer.
	res, err := apptest.NoRedirects.Do(build(k.prefix))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", name, err)
	}
	r := apptest.Response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			t.Fatalf("%s: answer is not JSON: %q", name, raw)
		}
	}
	if r.Status != c.status || r.ErrorCode() != c.code {
		t.Errorf("%s: got %d %s, want %d %s", name, r.Status, r.Raw, c.status, c.code)
	}
	if got := res.Header.Get("X-Request-Id"); got != reqID {
		t.Errorf("%s: X-Request-Id %q, want the request's %q", name, got, reqID)
	}
	// Documented by its own status, not only by the catch-all default.
	if route.Operation.Responses.Status(r.Status) == nil {
		t.Errorf("%s: status %d is not documented for %s %s: %s", name, r.Status, route.Method, route.Path, r.Raw)
	}
	if r.Status == http.StatusMethodNotAllowed {
		if got, allow := res.Header.Get("Allow"), k.c.notAllowed[route.Path].Allow; got != allow {
			t.Errorf("%s: Allow %q, want %q (the path's %s)", name, got, allow, oaMethodsNotAllowed)
		}
	}
	resIn := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 r.Status,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader(raw)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(ctx, resIn); err != nil {
		t.Errorf("%s: the answer breaks the document: %v\nanswer: %d %s", name, err, r.Status, r.Raw)
	}
	if op := route.Operation.OperationID; (op == "enterQueue" || op == "getMyEntry") && r.Status == http.StatusOK {
		if err := oaAnswerShape(r.Body); err != nil {
			t.Errorf("%s: %v: %s", name, err, r.Raw)
		}
	}
	k.hit.add(oaAnswer{route.Method, route.Path, r.Status})
	return r
}

// oaAnswerShape checks what the Waiting, Ready and NotInQueue schemas say in
// their descriptions, in the forms OpenAPI 3.0 generators read, rather than
// in schema keywords that they do not (oneOf of bare required lists, an
// enum of null): a WAITING answer has a place (all of position,
// queueLength, estimatedWaitSeconds) or opensAt, never both, and says
// whether the wait is known (oaWaitKnownShape); READY and NOT_IN_QUEUE
// carry pollAfterSeconds, always null.
func oaAnswerShape(body map[string]any) error {
	switch body["status"] {
	case "WAITING":
		var place int
		for _, f := range []string{"position", "queueLength", "estimatedWaitSeconds"} {
			if _, ok := body[f]; ok {
				place++
			}
		}
		_, opening := body["opensAt"]
		if !(place == 3 && !opening || place == 0 && opening) {
			return errors.New("WAITING with neither a whole place (position, queueLength, estimatedWaitSeconds) nor opensAt alone")
		}
		if opening && (body["waitTimeKnown"] != false || body["waitTimeUnknownReason"] != "opening") {
			return errors.New("WAITING before the opening: waitTimeKnown must be false, for the reason opening")
		}
		return oaWaitKnownShape(body)
	case "READY", "NOT_IN_QUEUE", "MOVED":
		if v, ok := body["pollAfterSeconds"]; !ok || v != nil {
			return fmt.Errorf("%s: pollAfterSeconds must be present and null", body["status"])
		}
	}
	return nil
}

// oaWaitKnownShape checks what the Waiting schema says of waitTimeKnown
// (issue 54): the range exactly when it is true, low ≤ the median ≤ high,
// and the reason exactly when it is false.
func oaWaitKnownShape(body map[string]any) error {
	known, ok := body["waitTimeKnown"].(bool)
	r, ranged := body["estimatedWaitRange"].(map[string]any)
	_, reason := body["waitTimeUnknownReason"]
	switch {
	case !ok:
		return errors.New("WAITING without waitTimeKnown")
	case known != ranged || known == reason:
		return fmt.Errorf("waitTimeKnown %v with a range %v and a reason %v: want the range exactly when known, the reason exactly when not", known, ranged, reason)
	case ranged:
		low, _ := r["low"].(float64)
		high, _ := r["high"].(float64)
		if median, _ := body["estimatedWaitSeconds"].(float64); !(low <= median && median <= high) {
			return fmt.Errorf("estimatedWaitSeconds %v outside its range [%v, %v]", median, low, high)
		}
	}
	return nil
}

// TestOpenAPI drives every documented route and status through the program.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	c := loadOpenAPI(t)
	all := newOAHits()
	var mu sync.Mutex
	ran := map[string]bool{}
	t.Run("backends", func(t *testing.T) {
		for _, b := range apptest.Backends {
			t.Run(b.Name, func(t *testing.T) {
				t.Parallel()
				h := newOAHits()
				runOpenAPI(t, c, b, h)
				if t.Failed() {
					return
				}
				mu.Lock()
				ran[b.Name] = true
				mu.Unlock()
				for tr := range h.set {
					all.add(tr)
				}
				// Every documented answer this backend can give was given.
				var missing []string
				for tr := range c.want {
					if !h.has(tr) && !oaCannotOn(c, b, tr) {
						missing = append(missing, tr.String())
					}
				}
				sort.Strings(missing)
				for _, m := range missing {
					t.Errorf("documented but never exercised on %s: %s", b.Name, m)
				}
			})
		}
	})
	t.Run("gateway", func(t *testing.T) {
		h := newOAHits()
		runOpenAPIGateway(t, c, h)
		for tr := range h.set {
			all.add(tr)
		}
	})
	if t.Failed() {
		return
	}
	for _, b := range apptest.Backends {
		if !ran[b.Name] {
			t.Logf("backend %s did not run: not checking that every documented answer was exercised on some backend", b.Name)
			return
		}
	}
	var missing []string
	for tr := range c.want {
		if !all.has(tr) {
			missing = append(missing, tr.String())
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("documented but never exercised on any backend: %s", m)
	}
	t.Logf("%d documented answers, all exercised", len(c.want))
}

// oaCannotOn says which documented answers a backend cannot give: the
// embedded default always has an admin token (it makes one up) and its
// stores live in process, so only draining makes it answer 503; and no
// place of its shadow line is there to clear (runOpenAPISuspects).
func oaCannotOn(c *oaContract, b apptest.Backend, tr oaAnswer) bool {
	if c.gatewayOnly(tr.path) {
		return true // runOpenAPIGateway gives those
	}
	if b.Redis {
		return false
	}
	switch {
	case tr.status == http.StatusServiceUnavailable && tr.path != "/readyz":
		return true
	case tr.status == http.StatusForbidden && strings.HasPrefix(tr.path, "/admin/"):
		return true
	case tr == oaAnswer{http.MethodPost, "/admin/v1/queues/{queue}/suspects/{id}/clear", http.StatusOK}:
		return true // runOpenAPISuspects takes a suspect's place on Redis only
	}
	return false
}

// TestOpenAPIRoutes: the routes the server registers are exactly the
// operations the document describes.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	c := loadOpenAPI(t)
	src, err := os.ReadFile("../httpapi/server.go")
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`\bm\.Handle(?:Func)?\("([A-Z]+) (/[^"]*)"`)
	registered := map[string]bool{}
	for _, m := range pattern.FindAllStringSubmatch(string(src), -1) {
		path := strings.ReplaceAll(m[2], "{$}", "")
		if path == "" {
			path = "/"
		}
		if strings.HasSuffix(path, "/") && path != "/" {
			// A subtree ("/static/"): the document names its files.
			path += "{file}"
		}
		registered[m[1]+" "+path] = true
	}
	if len(registered) < 10 {
		t.Fatalf("found only %d routes in server.go: the pattern no longer matches how routes are registered", len(registered))
	}
	gw, err := os.ReadFile("../gateway/gateway.go")
	if err != nil {
		t.Fatal(err)
	}
	gwRegistered := map[string]bool{}
	for _, m := range regexp.MustCompile(`\.API\.Handle\("([A-Z]+) (/[^"]*)"`).FindAllStringSubmatch(string(gw), -1) {
		gwRegistered[m[1]+" "+m[2]] = true
	}
	documented, gwDocumented := map[string]bool{}, map[string]bool{}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			switch {
			case op.Extensions[oaGateway] != nil:
				gwDocumented[method+" "+path] = true
			default:
				documented[method+" "+path] = true
			}
		}
	}
	for _, set := range []struct {
		where                 string
		registered, described map[string]bool
	}{{"server.go", registered, documented}, {"gateway.go", gwRegistered, gwDocumented}} {
		if len(set.registered) == 0 {
			t.Fatalf("found no routes in %s: the pattern no longer matches how routes are registered", set.where)
		}
		for r := range set.registered {
			if !set.described[r] {
				t.Errorf("%s serves %s; openapi.yaml does not describe it (as %s)", set.where, r, set.where)
			}
		}
		for r := range set.described {
			if !set.registered[r] {
				t.Errorf("openapi.yaml describes %s; %s does not register it", r, set.where)
			}
		}
	}
}

// runOpenAPI drives every route and status on one backend.
func runOpenAPI(t *testing.T, c *oaContract, b apptest.Backend, h *oaHits) {
	// The shop's own page (examples/page): its files are served too.
	in := apptest.Boot(t, b, func(c *app.Config) { c.PageDir = "../../examples/page" })
	k := &oaChecker{c: c, in: in, hit: h}
	admin := in.AdminAuth()

	// Queues: a paused one to wait in, a fast one to be admitted from, a
	// full one.
	paused, fast, full := apptest.UniqueID("paused"), apptest.UniqueID("fast"), apptest.UniqueID("full")
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + paused, auth: admin, body: map[string]any{"paused": true}, status: 200})
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + fast, auth: admin, body: apptest.FastSaleQueue, status: 200})
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + full, auth: admin,
		body: map[string]any{"paused": true, "capacity": 1, "ratePerSecond": nil}, status: 200})

	// ---- the line
	entries := func(q string) string { return "/api/v1/queues/" + q + "/entries" }
	me := func(q string) string { return "/api/v1/queues/" + q + "/entries/me" }
	alice, bob := apptest.UniqueID("alice"), apptest.UniqueID("bob")
	r := k.call(t, oaCase{method: "POST", path: entries(paused), auth: in.As(alice), status: 200})
	if r.Str("status") != "WAITING" || r.Body["paused"] != true {
		t.Errorf("enter a paused queue: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: me(paused), auth: in.As(alice), status: 200})
	k.call(t, oaCase{method: "GET", path: me(paused), auth: in.As(bob), status: 200}) // NOT_IN_QUEUE
	// The front document, and the ticket a page reads it by.
	frontDoc := k.call(t, oaCase{method: "GET", path: "/api/v1/queues/" + paused + "/front", status: 200})
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/" + paused + "/front", headers: []string{"If-None-Match", frontDoc.Header.Get("ETag")}, status: 304})
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/nosuchqueue/front", status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/bad*name/front", status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: me(paused), auth: in.As(alice), headers: []string{"X-Waitroom-Ticket", r.Str("ticket")}, status: 200})
	k.call(t, oaCase{method: "GET", path: me(paused), auth: in.As(bob), headers: []string{"X-Waitroom-Ticket", r.Str("ticket")}, status: 403, code: "ticket_invalid"})
	k.call(t, oaCase{method: "GET", path: me(paused) + "?waitSeconds=5", auth: in.As(alice), status: 200}) // paused: not held
	// A hidden page's polls and beacons (issue 55).
	k.call(t, oaCase{method: "GET", path: me(paused) + "?hidden=1", auth: in.As(alice), status: 200})
	k.call(t, oaCase{method: "GET", path: me(paused) + "?hidden=yes", auth: in.As(alice), status: 400, code: "invalid_request", specInvalid: true})
	presence := me(paused) + "/presence"
	k.call(t, oaCase{method: "POST", path: presence, auth: in.As(alice), body: map[string]any{"hidden": true}, status: 204})
	k.call(t, oaCase{method: "POST", path: presence, auth: in.As(bob), body: map[string]any{"hidden": false}, status: 204}) // no place: nothing marked
	k.call(t, oaCase{method: "POST", path: presence, auth: in.As(alice), body: map[string]any{"hidden": "yes"}, status: 400, code: "invalid_body", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: presence, auth: in.As("john doe"), body: map[string]any{"hidden": true}, status: 400, code: "invalid_user_id"})
	k.call(t, oaCase{method: "POST", path: me("bad*name") + "/presence", auth: in.As(alice), body: map[string]any{"hidden": true}, status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: presence, body: map[string]any{"hidden": true}, status: 401, code: "unauthenticated"})
	k.call(t, oaCase{method: "POST", path: me("nosuchqueue") + "/presence", auth: in.As(alice), body: map[string]any{"hidden": true}, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "POST", path: presence, auth: in.As(alice), body: `{"hidden":true}` + strings.Repeat(" ", 2000), status: 413, code: "body_too_large"})
	k.call(t, oaCase{method: "GET", path: me(paused) + "?waitSeconds=99", auth: in.As(alice), status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: entries(paused) + "?waitSeconds=5", auth: in.As(alice), status: 200})
	k.call(t, oaCase{method: "POST", path: entries(paused) + "?waitSeconds=-1", auth: in.As(alice), status: 400, code: "invalid_request", specInvalid: true})
	// Before the opening: WAITING with opensAt, no place.
	opening := apptest.UniqueID("opening")
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + opening, auth: admin,
		body: map[string]any{"opensAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, status: 200})
	if r := k.call(t, oaCase{method: "POST", path: entries(opening), auth: in.As(alice), status: 200}); r.Str("opensAt") == "" || r.Body["position"] != nil {
		t.Errorf("enter before the opening: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: me(opening), auth: in.As(alice), status: 200})
	// Its draw, committed to before the opening (the admitter commits as
	// soon as the opening is set): the ledger, anyone's to read.
	draws := func(q string) string { return "/api/v1/queues/" + q + "/draw" }
	k.call(t, oaCase{method: "GET", path: draws(opening), status: 200})
	if r := k.call(t, oaCase{method: "GET", path: draws(paused), status: 200}); r.Raw != `{"queue":"`+paused+`","commitments":[]}`+"\n" {
		t.Errorf("the draws of a queue with no opening: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: draws(paused) + "?commitment=" + strings.Repeat("0", 64), status: 404, code: "draw_not_found"})
	k.call(t, oaCase{method: "GET", path: draws(paused) + "?commitment=ABC", status: 400, code: "invalid_commitment", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: draws("nosuchqueue"), status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: draws("bad*name"), status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: entries(full), auth: in.As(alice), status: 200})                   // takes the one place
	k.call(t, oaCase{method: "POST", path: entries(full), auth: in.As(bob), status: 429, code: "queue_full"}) // none left
	k.call(t, oaCase{method: "DELETE", path: me(paused), auth: in.As(alice), status: 204})                    // leave
	k.call(t, oaCase{method: "DELETE", path: me("nosuchqueue"), auth: in.As(alice), status: 204})             // nothing to leave
	k.call(t, oaCase{method: "POST", path: entries("nosuchqueue"), auth: in.As(alice), status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: me("nosuchqueue"), auth: in.As(alice), status: 404, code: "queue_not_found"})
	for _, m := range []struct{ method, path string }{{"POST", entries(paused)}, {"GET", me(paused)}, {"DELETE", me(paused)}} {
		k.call(t, oaCase{method: m.method, path: m.path, status: 401, code: "unauthenticated"})
		k.call(t, oaCase{method: m.method, path: m.path, auth: "Bearer not-a-jwt", status: 401, code: "unauthenticated"})
		k.call(t, oaCase{method: m.method, path: m.path, cookie: "wr_session=anon-1.forged", status: 401, code: "unauthenticated"})
		k.call(t, oaCase{method: m.method, path: m.path, auth: in.As("john doe"), status: 400, code: "invalid_user_id"})
		k.call(t, oaCase{method: m.method, path: strings.Replace(m.path, paused, "bad*name", 1), auth: in.As(alice),
			status: 400, code: "invalid_queue_name", specInvalid: true})
	}

	// The page's session cookie is an identity.
	page := k.call(t, oaCase{method: "GET", path: "/", status: 200})
	cookie := oaSessionCookie(t, page)
	k.call(t, oaCase{method: "GET", path: "/", cookie: cookie, status: 200})
	if page2 := k.call(t, oaCase{method: "GET", path: "/q/" + paused, status: 200}); page2.Header.Get("Set-Cookie") == "" {
		t.Error("GET /q/{queue} without identity set no cookie")
	}
	k.call(t, oaCase{method: "GET", path: "/q/bad*name", status: 400, code: "invalid_queue_name", specInvalid: true})
	// The page without JavaScript: under challenge it says why it cannot
	// take a place; under any it takes one.
	k.call(t, oaCase{method: "GET", path: "/q/" + paused + "/noscript?lang=ko", cookie: cookie, status: 200})
	k.call(t, oaCase{method: "GET", path: "/q/" + paused + "/noscript?joined=1", status: 200})
	k.call(t, oaCase{method: "GET", path: "/q/nosuchqueue/noscript", cookie: cookie, status: 404})
	k.call(t, oaCase{method: "GET", path: "/q/bad*name/noscript", status: 400, code: "invalid_queue_name", specInvalid: true})
	// The operator's message, in the answers of the line, by language.
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin,
		body: map[string]any{"message": map[string]any{"en": "Restocked <b>M</b>", "ko": "재입고"}}, status: 200})
	if r := k.call(t, oaCase{method: "GET", path: me(paused) + "?lang=ko", auth: in.As(bob), status: 200}); r.Str("message") != "재입고" {
		t.Errorf("the message for ?lang=ko: %s", r.Raw)
	}
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin, body: map[string]any{"message": strings.Repeat("x", 501)},
		status: 400, code: "invalid_config", specInvalid: true})
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin, body: map[string]any{"message": ""}, status: 200})
	// An anonymous session solves the queue's challenge to take a place.
	r = k.call(t, oaCase{method: "POST", path: entries(paused), cookie: cookie, status: 403, code: "challenge_required"})
	if e, _ := r.Body["error"].(map[string]any); e["challengeUrl"] != "/api/v1/queues/"+paused+"/challenge" {
		t.Errorf("challenge_required names %v, want the queue's challenge URL", e["challengeUrl"])
	}
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/" + paused + "/challenge", status: 200})
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/nosuchqueue/challenge", status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/bad*name/challenge", status: 400, code: "invalid_queue_name", specInvalid: true})
	// A queue that takes no newcomers hands out no challenge for a place.
	closed := apptest.UniqueID("closed")
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + closed, auth: admin, body: map[string]any{"queueingMethod": "reject"}, status: 200})
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/" + closed + "/challenge", status: 403, code: "queue_closed"})
	// Nor for a place in a full line.
	fullQ := apptest.UniqueID("full")
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + fullQ, auth: admin, body: map[string]any{"paused": true, "capacity": 1}, status: 200})
	k.call(t, oaCase{method: "POST", path: "/api/v1/queues/" + fullQ + "/entries", auth: in.As("fills-it"), status: 200})
	// The route reads the length from the instance's snapshot of the line,
	// up to --status-snapshot-age old.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if in.Do("GET", "/api/v1/queues/"+fullQ+"/challenge", "", nil).Status == 429 {
			break
		}
	}
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/" + fullQ + "/challenge", status: 429, code: "queue_full"})
	solution := in.Solve("", paused)
	k.call(t, oaCase{method: "POST", path: entries(paused), cookie: cookie, headers: []string{"X-Challenge-Solution", solution}, status: 200})
	k.call(t, oaCase{method: "POST", path: entries(paused), cookie: cookie, status: 200}) // in line: no new solution asked
	_, otherSession := identity.New([]byte(in.AuthSecret)).NewSession()
	k.call(t, oaCase{method: "POST", path: entries(paused), cookie: identity.CookieName + "=" + otherSession,
		headers: []string{"X-Challenge-Solution", solution}, status: 403, code: "challenge_required"}) // used already
	k.call(t, oaCase{method: "GET", path: me(paused), cookie: cookie, status: 200})
	k.call(t, oaCase{method: "DELETE", path: me(paused), cookie: cookie, status: 204})
	signedOnly := apptest.UniqueID("signed")
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + signedOnly, auth: admin, body: map[string]any{"paused": true, "entry": "signed"}, status: 200})
	k.call(t, oaCase{method: "POST", path: entries(signedOnly), cookie: cookie, status: 403, code: "signin_required"})
	k.call(t, oaCase{method: "POST", path: entries(signedOnly), auth: in.As(alice), status: 200})

	// Admitted: READY on entering again and on status.
	carol := apptest.UniqueID("carol")
	k.call(t, oaCase{method: "POST", path: entries(fast), auth: in.As(carol), status: 200})
	token := in.WaitReady(fast, carol)
	if r := k.call(t, oaCase{method: "POST", path: entries(fast), auth: in.As(carol), status: 200}); r.Str("status") != "READY" || r.Str("token") != token {
		t.Errorf("enter again when READY: %s", r.Raw)
	}
	if r := k.call(t, oaCase{method: "GET", path: me(fast), auth: in.As(carol), status: 200}); r.Str("status") != "READY" {
		t.Errorf("status when READY: %s", r.Raw)
	}

	// ---- products and orders
	tee, empty := apptest.UniqueID("tee"), apptest.UniqueID("empty")
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/products/" + tee, auth: admin,
		body: map[string]any{"name": "T-shirt", "stock": 5, "queue": fast}, status: 200})
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/products/" + empty, auth: admin,
		body: map[string]any{"name": "Sold out", "stock": 0, "queue": fast}, status: 200})
	dflt := apptest.UniqueID("dflt")
	if r := k.call(t, oaCase{method: "PUT", path: "/admin/v1/products/" + dflt, auth: admin,
		body: map[string]any{"name": "Default", "stock": 1, "queue": nil}, status: 200}); r.Str("queue") != "default" {
		t.Errorf("a product without a queue: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/api/v1/products/" + tee, status: 200})
	k.call(t, oaCase{method: "GET", path: "/api/v1/products/" + apptest.UniqueID("nope"), status: 404, code: "product_not_found"})

	const orders = "/api/v1/orders"
	orderBody := func(product string) map[string]any { return map[string]any{"productId": product, "quantity": 1} }
	tokenHdr := func(tok string, more ...string) []string { return append([]string{"X-Entry-Token", tok}, more...) }
	// Refusals before anything is bought.
	k.call(t, oaCase{method: "POST", path: orders, body: orderBody(tee), headers: tokenHdr(token), status: 401, code: "unauthenticated"})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As("john doe"), body: orderBody(tee), headers: tokenHdr(token), status: 400, code: "invalid_user_id"})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: map[string]any{"productId": tee, "quantity": 0},
		headers: tokenHdr(token), status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: `{"productId":"` + tee + `","quantity":1,"price":0}`,
		headers: tokenHdr(token), status: 400, code: "invalid_request", specInvalid: true})
	// A valid order padded past 4 KiB: the document states the limit in prose.
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: `{"productId":"` + tee + `","quantity":1}` + strings.Repeat(" ", 5000),
		headers: tokenHdr(token), status: 413, code: "body_too_large"})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(tee),
		headers: tokenHdr(token, "Idempotency-Key", strings.Repeat("k", 129)), status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(tee), status: 403, code: "entry_token_invalid", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(tee), headers: tokenHdr("not-the-token"), status: 403, code: "entry_token_invalid"})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(alice), body: orderBody(tee), headers: tokenHdr(token), status: 403, code: "entry_token_invalid"})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(apptest.UniqueID("nope")), headers: tokenHdr(token), status: 404, code: "product_not_found"})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(empty), headers: tokenHdr(token), status: 409, code: "out_of_stock"})
	// Bought (the token kept through every refusal above), then replayed.
	key := apptest.UniqueID("key")
	o := k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(tee), headers: tokenHdr(token, "Idempotency-Key", key), status: 201})
	again := k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(tee), headers: tokenHdr(token, "Idempotency-Key", key), status: 200})
	if again.Header.Get("Idempotent-Replayed") != "true" || again.Num("id") != o.Num("id") {
		t.Errorf("replay: %s %v, first %s", again.Raw, again.Header, o.Raw)
	}
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: map[string]any{"productId": tee, "quantity": 2},
		headers: tokenHdr(token, "Idempotency-Key", key), status: 422, code: "idempotency_key_reused"})
	k.call(t, oaCase{method: "POST", path: orders, auth: in.As(carol), body: orderBody(tee), headers: tokenHdr(token), status: 403, code: "entry_token_invalid"}) // spent
	if r := k.call(t, oaCase{method: "GET", path: me(fast), auth: in.As(carol), status: 200}); r.Str("status") != "NOT_IN_QUEUE" {
		t.Errorf("status after buying: %s", r.Raw)
	}

	// ---- admin
	for _, m := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/admin/v1/queues", nil},
		{"GET", "/admin/v1/queues/" + paused, nil},
		{"PUT", "/admin/v1/queues/" + paused, map[string]any{"paused": true}},
		{"PATCH", "/admin/v1/queues/" + paused, map[string]any{"paused": true}},
		{"GET", "/admin/v1/queues/" + paused + "/history", nil},
		{"GET", "/admin/v1/queues/" + paused + "/rollups", nil},
		{"GET", "/admin/v1/queues/" + paused + "/schedule", nil},
		{"GET", "/admin/v1/queues/" + paused + "/report", nil},
		{"GET", "/admin/v1/queue-settings", nil},
		{"PUT", "/admin/v1/products/" + tee, map[string]any{"name": "x", "stock": 1}},
		{"GET", "/admin/v1/products", nil},
		{"POST", "/admin/v1/products/" + tee + "/restock", map[string]any{"quantity": 1}},
		{"POST", "/admin/v1/queues/" + paused + "/sold-out", nil},
		{"POST", "/admin/v1/queues/" + paused + "/restock", map[string]any{"unitsLeft": 1}},
		{"GET", "/admin/v1/queues/" + paused + "/suspects", nil},
		{"POST", "/admin/v1/queues/" + paused + "/suspects/1/clear", nil},
		{"POST", "/admin/v1/tokens", map[string]any{"name": "x", "role": "viewer"}},
		{"GET", "/admin/v1/tokens", nil},
		{"DELETE", "/admin/v1/tokens/x", nil},
	} {
		k.call(t, oaCase{method: m.method, path: m.path, body: m.body, status: 401, code: "admin_unauthorized"})
		k.call(t, oaCase{method: m.method, path: m.path, auth: in.As("admin"), body: m.body, status: 401, code: "admin_unauthorized"})
	}
	if r := k.call(t, oaCase{method: "GET", path: "/admin/v1/queues", auth: admin, status: 200}); !strings.Contains(r.Raw, `"queue":"default"`) {
		t.Errorf("list without default: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/default", auth: admin, status: 200})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/nosuchqueue", auth: admin, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/bad*name", auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/default/history", auth: admin, status: 200})
	if r := k.call(t, oaCase{method: "GET", path: "/admin/v1/queue-settings", auth: admin, status: 200}); !strings.Contains(r.Raw, `"name":"abandonAfterSeconds"`) {
		t.Errorf("queue settings: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/nosuchqueue/history", auth: admin, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/bad*name/history", auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/default/rollups", auth: admin, status: 200})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/default/rollups?since=2026-12-01T00:00:00Z&until=2026-12-01T01:00:00Z", auth: admin, status: 200})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/default/rollups?since=yesterday", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/bad*name/rollups", auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	// A queue's phases, shown in its stats and as its schedule.
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	phased := map[string]any{"paused": true, "phases": []any{map[string]any{"name": "members", "startsAt": soon, "ratePerSecond": 50, "queueingMethod": "random",
		"entry": "signed", "message": map[string]string{"en": "Members first", "ja": "会員が先"}}}}
	if r := k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin, body: phased, status: 200}); !strings.Contains(r.Raw, `"phaseInForce":null`) {
		t.Errorf("PATCH phases: %s", r.Raw)
	}
	if r := k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/" + paused + "/schedule", auth: admin, status: 200}); !strings.Contains(r.Raw, `"phase":"members"`) {
		t.Errorf("schedule: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/nosuchqueue/schedule", auth: admin, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/bad*name/schedule", auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	// The sale's report: a page of HTML, whatever the span holds.
	if r := k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/" + paused + "/report?since=2026-12-04T20:00:00Z&tz=Asia/Seoul&lang=ko", auth: admin, status: 200}); !strings.Contains(r.Raw, `<html lang="ko">`) ||
		r.Header.Get("Content-Language") != "ko" {
		t.Errorf("report: %s %.200s", r.Header, r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/" + paused + "/report?since=2026-12-04T21:00:00Z&until=2026-12-04T20:00:00Z", auth: admin, status: 400, code: "invalid_request"})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/" + paused + "/report?tz=Mars/Olympus", auth: admin, status: 400, code: "invalid_request"})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/nosuchqueue/report", auth: admin, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/bad*name/report", auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin, body: map[string]any{"phases": []any{}}, status: 200})
	if r := k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin, body: map[string]any{"capacity": 50, "paused": nil}, status: 200}); r.Num("capacity") != 50 || r.Body["paused"] != true {
		t.Errorf("PATCH: %s", r.Raw)
	}
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/nosuchqueue", auth: admin, body: map[string]any{"paused": true}, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin, body: map[string]any{"entry": "everyone"}, status: 400, code: "invalid_config", specInvalid: true})
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/" + paused, auth: admin, body: map[string]any{"challengeCost": 1}, status: 400, code: "invalid_config", specInvalid: true})
	for _, method := range []string{"PUT", "PATCH"} {
		p := "/admin/v1/queues/" + paused
		k.call(t, oaCase{method: method, path: p, auth: admin, body: map[string]any{"ratePerSecond": -1}, status: 400, code: "invalid_config", specInvalid: true})
		k.call(t, oaCase{method: method, path: p, auth: admin, body: map[string]any{"targetLatencyMs": -1}, status: 400, code: "invalid_config", specInvalid: true})
		k.call(t, oaCase{method: method, path: p, auth: admin, body: map[string]any{"opensAt": "tomorrow"}, status: 400, code: "invalid_config", specInvalid: true})
		// Rules the document states in prose: 1–14 s, and min above max.
		k.call(t, oaCase{method: method, path: p, auth: admin, body: map[string]any{"abandonAfterSeconds": 14}, status: 400, code: "invalid_config"})
		k.call(t, oaCase{method: method, path: p, auth: admin, body: map[string]any{"minRatePerSecond": 50, "maxRatePerSecond": 5}, status: 400, code: "invalid_config"})
		k.call(t, oaCase{method: method, path: p, auth: admin, body: `{"rateDerivation":"mine"}`, status: 400, code: "invalid_request", specInvalid: true})
		// A rule between fields: the document states it in prose only.
		k.call(t, oaCase{method: method, path: p, auth: admin, body: map[string]any{"ratePerSecond": 1000, "batchSize": 10, "intervalMs": 100}, status: 400, code: "invalid_config"})
		k.call(t, oaCase{method: method, path: p, auth: admin, body: `{"rate":5}`, status: 400, code: "invalid_request", specInvalid: true})
		k.call(t, oaCase{method: method, path: p, auth: admin, body: `null`, status: 400, code: "invalid_request", specInvalid: true})
		k.call(t, oaCase{method: method, path: p, auth: admin, body: `{"paused":true` + strings.Repeat(" ", 64<<10) + `}`, status: 413, code: "body_too_large"})
		k.call(t, oaCase{method: method, path: "/admin/v1/queues/bad*name", auth: admin, body: map[string]any{}, status: 400, code: "invalid_queue_name", specInvalid: true})
	}
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/products/" + tee, auth: admin, body: map[string]any{"name": "x"}, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/products/" + tee, auth: admin, body: map[string]any{"name": "x", "stock": 1, "queue": "a{b}"}, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/products/" + strings.Repeat("p", 129), auth: admin, body: map[string]any{"name": "x", "stock": 1}, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/products/" + tee, auth: admin, body: `{"name":"` + strings.Repeat("n", 5000) + `","stock":1}`, status: 413, code: "body_too_large", specInvalid: true})

	// The product list, a page at a time, and restocking.
	restock := "/admin/v1/products/" + tee + "/restock"
	if r := k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: map[string]any{"quantity": 3}, status: 200}); r.Num("stock") != 7 {
		t.Errorf("restock 3 onto the 4 left: %s", r.Raw)
	}
	k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: map[string]any{"quantity": 0}, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: map[string]any{}, status: 400, code: "invalid_request", specInvalid: true})
	// Past the largest stock: the document states it in prose only.
	k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: map[string]any{"quantity": 1_000_000_000}, status: 400, code: "invalid_request"})
	k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: `{"quantity":1` + strings.Repeat(" ", 5000) + `}`, status: 413, code: "body_too_large"})
	k.call(t, oaCase{method: "POST", path: "/admin/v1/products/" + apptest.UniqueID("nope") + "/restock", auth: admin, body: map[string]any{"quantity": 1}, status: 404, code: "product_not_found"})
	// This test made three products: a page of one has a next.
	first := k.call(t, oaCase{method: "GET", path: "/admin/v1/products?limit=1", auth: admin, status: 200})
	if next := first.Str("next"); next == "" {
		t.Errorf("a page of 1 with more behind has no next: %s", first.Raw)
	} else {
		k.call(t, oaCase{method: "GET", path: "/admin/v1/products?limit=1000&after=" + url.QueryEscape(next), auth: admin, status: 200})
	}
	if r := k.call(t, oaCase{method: "GET", path: "/admin/v1/products?limit=1&after=" + url.QueryEscape(tee[:len(tee)-1]), auth: admin, status: 200}); !strings.Contains(r.Raw, `{"id":"`+tee+`","name":"T-shirt","stock":7,"queue":"`+fast+`","orders":1}`) {
		t.Errorf("the list does not show %s with its one order: %s", tee, r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/admin/v1/products?limit=0", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/products?limit=ten", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/products?after=" + strings.Repeat("p", 129), auth: admin, status: 400, code: "invalid_request", specInvalid: true})

	runOpenAPIStock(t, k, admin)
	runOpenAPISuspects(t, k, b, admin)
	runOpenAPILanes(t, k, admin)
	runOpenAPIHandoff(t, k, admin)
	runOpenAPIAudit(t, k, admin)
	runOpenAPISignIn(t, k, b)

	// ---- the pages and their files
	if r := k.call(t, oaCase{method: "GET", path: "/?lang=ko", cookie: cookie, status: 200}); r.Header.Get("Content-Language") != "ko" {
		t.Errorf("GET /?lang=ko: Content-Language %q", r.Header.Get("Content-Language"))
	}
	k.call(t, oaCase{method: "GET", path: "/q/" + paused, headers: []string{"Accept-Language", "ko-KR,ko;q=0.9"}, cookie: cookie, status: 200})
	k.call(t, oaCase{method: "GET", path: "/admin", status: 200})
	k.call(t, oaCase{method: "GET", path: "/admin?lang=ko", status: 200})
	for _, f := range []string{"waitroom.css", "waiting.js", "admin.js", "favicon.svg"} {
		k.call(t, oaCase{method: "GET", path: "/static/" + f, status: 200})
	}
	k.call(t, oaCase{method: "GET", path: "/static/waitroom.css?v=old", status: 200})
	k.call(t, oaCase{method: "GET", path: "/static/waitroom.css", headers: []string{"Range", "bytes=0-9"}, status: 206})
	k.call(t, oaCase{method: "GET", path: "/static/waitroom.css", headers: []string{"Range", "bytes=99999999-"}, status: 416})
	k.call(t, oaCase{method: "GET", path: "/static/nope.css", status: 404})
	css := k.call(t, oaCase{method: "GET", path: "/assets/custom/brand.css", status: 200})
	k.call(t, oaCase{method: "GET", path: "/assets/custom/brand.css?v=1", headers: []string{"If-None-Match", css.Header.Get("ETag")}, status: 304})
	k.call(t, oaCase{method: "GET", path: "/assets/custom/nope.css", status: 404})

	// ---- operations
	k.call(t, oaCase{method: "GET", path: "/healthz", status: 200})
	k.call(t, oaCase{method: "GET", path: "/readyz", status: 200})
	k.call(t, oaCase{method: "GET", path: "/readyz?strict=1", status: 200})
	k.call(t, oaCase{method: "GET", path: "/readyz?strict=maybe", status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/metrics", status: 200})
	k.call(t, oaCase{method: "GET", path: "/metrics", headers: []string{"Accept", "application/openmetrics-text; version=1.0.0"}, status: 200})
	if doc := k.call(t, oaCase{method: "GET", path: "/openapi.yaml", status: 200}); doc.Raw != string(waitroom.OpenAPI) {
		t.Error("GET /openapi.yaml is not the embedded document")
	}

	// ---- 405 on every method a path does not serve.
	for path, na := range c.notAllowed {
		concrete := strings.NewReplacer("{queue}", paused, "suspects/{id}", "suspects/1", "{id}", tee, "{file}", "waitroom.css", "{name}", "nobody").Replace(path)
		for _, method := range na.Methods {
			if !c.gatewayOnly(path) {
				k.call(t, oaCase{method: method, path: concrete, auth: in.As(alice), status: 405, code: "method_not_allowed"})
			}
		}
	}

	// ---- a body on every route that takes none
	oaBodiesRefused(t, c, k, false, strings.NewReplacer("{queue}", paused, "suspects/{id}", "suspects/1", "{id}", tee, "{file}", "waitroom.css", "{code}", strings.Repeat("a", 32), "{name}", "nobody"))
	runOpenAPITokens(t, k, admin)

	// ---- what the document's introduction promises for every route
	checkConventions(t, in)

	// ---- failures only another configuration produces
	t.Run("per-address limits", func(t *testing.T) {
		in := apptest.Boot(t, b, func(c *app.Config) {
			c.AddressSessionBurst, c.AddressSessionRate = 1, 0.01
			c.AddressEntryBurst, c.AddressEntryRate = 1, 0.01
		})
		k := &oaChecker{c: c, in: in, hit: h}
		first := oaSessionCookie(t, k.call(t, oaCase{method: "GET", path: "/", status: 200}))
		r := k.call(t, oaCase{method: "GET", path: "/q/default", status: 429, code: "too_many_entries"})
		if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 90 || ra > 100 {
			t.Errorf("Retry-After %q, want about 100 s (one session per 100 s)", r.Header.Get("Retry-After"))
		}
		k.call(t, oaCase{method: "GET", path: "/", status: 429, code: "too_many_entries"})
		_, second := identity.New([]byte(in.AuthSecret)).NewSession()
		k.call(t, oaCase{method: "POST", path: "/api/v1/queues/default/entries", cookie: first,
			headers: []string{"X-Challenge-Solution", in.Solve("", "default")}, status: 200})
		k.call(t, oaCase{method: "POST", path: "/api/v1/queues/default/entries", cookie: identity.CookieName + "=" + second,
			headers: []string{"X-Challenge-Solution", in.Solve("", "default")}, status: 429, code: "too_many_entries"})
	})
	t.Run("payment fails", func(t *testing.T) {
		in := apptest.Boot(t, b, func(c *app.Config) { c.PaymentFailureRate = 1 })
		k := &oaChecker{c: c, in: in, hit: h}
		sale := apptest.Shop{Instance: in}
		q, p := sale.NewSale(1, nil)
		u := apptest.UniqueID("payer")
		tok := sale.Admit(q, u)[u]
		k.call(t, oaCase{method: "POST", path: orders, auth: in.As(u), body: orderBody(p), headers: tokenHdr(tok), status: 402, code: "payment_failed"})
		sale.AssertHolds(q, u, tok)
	})
	if b.Redis {
		t.Run("admin disabled", func(t *testing.T) {
			in := apptest.Boot(t, b, func(c *app.Config) { c.AdminToken = "" })
			k := &oaChecker{c: c, in: in, hit: h}
			for _, m := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/admin/v1/queues", nil},
				{"GET", "/admin/v1/queues/default", nil},
				{"PUT", "/admin/v1/queues/default", map[string]any{}},
				{"PATCH", "/admin/v1/queues/default", map[string]any{"paused": true}},
				{"GET", "/admin/v1/queues/default/history", nil},
				{"GET", "/admin/v1/queues/default/rollups", nil},
				{"GET", "/admin/v1/queues/default/schedule", nil},
				{"GET", "/admin/v1/queues/default/report", nil},
				{"GET", "/admin/v1/queue-settings", nil},
				{"PUT", "/admin/v1/products/p", map[string]any{"name": "x", "stock": 1}},
				{"GET", "/admin/v1/products", nil},
				{"POST", "/admin/v1/products/p/restock", map[string]any{"quantity": 1}},
				{"POST", "/admin/v1/queues/default/sold-out", nil},
				{"POST", "/admin/v1/queues/default/restock", nil},
				{"GET", "/admin/v1/queues/default/suspects", nil},
				{"POST", "/admin/v1/queues/default/suspects/1/clear", nil},
				{"POST", "/admin/v1/queues/default/codes", map[string]any{"lane": "invited", "codes": []string{}}},
				{"POST", "/admin/v1/tokens", map[string]any{"name": "x", "role": "viewer"}},
				{"GET", "/admin/v1/tokens", nil},
				{"DELETE", "/admin/v1/tokens/x", nil},
				{"GET", "/admin/v1/audit", nil},
			} {
				k.call(t, oaCase{method: m.method, path: m.path, auth: "Bearer anything", body: m.body, status: 403, code: "admin_disabled"})
			}
		})
		t.Run("redis and postgres down", func(t *testing.T) { runOpenAPIOutage(t, c, b, h) })
	}

	// Last: a draining instance is not ready.
	in.Main.API.SetDraining(true)
	k.call(t, oaCase{method: "GET", path: "/readyz", status: 503, code: "draining"})
}

// runOpenAPILanes drives lanes and access codes (issue 53): the codes
// upload (JSON, CSV, and its refusals), a place taken with a code (its
// answer names the lane), the code refused once used, wrong, or in a URL,
// and the page without JavaScript's code form.
func runOpenAPILanes(t *testing.T, k *oaChecker, admin string) {
	t.Helper()
	in := k.in
	q := apptest.UniqueID("lanes")
	entries, codes := "/api/v1/queues/"+q+"/entries", "/admin/v1/queues/"+q+"/codes"
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + q, auth: admin, status: 200, body: map[string]any{"paused": true,
		"lanes": []map[string]any{{"name": "invited", "codes": true, "share": 0.4}, {"name": "public", "share": 0.6}}}})
	first, second, third := accesscode.New(), accesscode.New(), accesscode.New()
	k.call(t, oaCase{method: "POST", path: codes, auth: admin, body: map[string]any{"lane": "invited", "codes": []string{first, "nope"}}, status: 200})
	k.call(t, oaCase{method: "POST", path: codes, auth: admin, headers: []string{"Content-Type", "text/csv"},
		body: "code,lane,uses\n" + second + ",invited,1\n" + third + ",invited,1\n", status: 200})
	k.call(t, oaCase{method: "POST", path: codes, auth: admin, headers: []string{"Content-Type", "text/csv"}, body: "code\n" + first + "\n",
		status: 400, code: "invalid_request"})
	k.call(t, oaCase{method: "POST", path: codes, auth: "Bearer wrong", body: map[string]any{"lane": "invited", "codes": []string{first}}, status: 401, code: "admin_unauthorized"})
	k.call(t, oaCase{method: "POST", path: "/admin/v1/queues/nosuchqueue/codes", auth: admin, body: map[string]any{"lane": "invited", "codes": []string{first}},
		status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "POST", path: codes, auth: admin, body: `{"lane":"invited","codes":[` + strings.Repeat(`"x",`, 100_000) + `"x"]}`,
		status: 413, code: "body_too_large", specInvalid: true})

	holder, late := apptest.UniqueID("holder"), apptest.UniqueID("late")
	if r := k.call(t, oaCase{method: "POST", path: entries, auth: in.As(holder), body: map[string]any{"accessCode": first}, status: 200}); r.Str("lane") != "invited" {
		t.Errorf("enter with a code: %s, want the lane invited", r.Raw)
	}
	if r := k.call(t, oaCase{method: "GET", path: entries + "/me", auth: in.As(holder), status: 200}); r.Str("lane") != "invited" {
		t.Errorf("status in a lane: %s", r.Raw)
	}
	k.call(t, oaCase{method: "POST", path: entries, auth: in.As(late), body: map[string]any{"accessCode": first}, status: 409, code: "code_used"})
	k.call(t, oaCase{method: "POST", path: entries, auth: in.As(late), body: map[string]any{"accessCode": accesscode.New()}, status: 403, code: "invalid_code"})
	k.call(t, oaCase{method: "POST", path: entries + "?accessCode=" + second, auth: in.As(late), status: 400, code: "code_in_url"})
	k.call(t, oaCase{method: "POST", path: entries, auth: in.As(late), headers: []string{"Content-Type", "text/plain"}, body: "accessCode=" + second,
		status: 415, code: "unsupported_media_type", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: entries, auth: in.As(late), body: `{"accessCode":"` + strings.Repeat("A", 2000) + `"}`,
		status: 413, code: "body_too_large", specInvalid: true})

	form := []string{"Content-Type", "application/x-www-form-urlencoded"}
	noScript := "/q/" + q + "/noscript"
	k.call(t, oaCase{method: "POST", path: noScript, auth: in.As(late), headers: form, body: "accessCode=" + second, status: 200})
	k.call(t, oaCase{method: "POST", path: noScript + "?code=" + third, auth: in.As(late), headers: form, body: "accessCode=", status: 400, code: "code_in_url"})
	k.call(t, oaCase{method: "POST", path: noScript, auth: in.As(late), headers: []string{"Content-Type", "text/plain"}, body: third,
		status: 415, code: "unsupported_media_type", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: "/q/nosuchqueue/noscript", auth: in.As(late), headers: form, body: "accessCode=" + third, status: 404})
	k.call(t, oaCase{method: "POST", path: noScript, auth: in.As(late), headers: form, body: "accessCode=" + strings.Repeat("A", 2000),
		status: 413, code: "body_too_large", specInvalid: true})
}

// runOpenAPIHandoff drives a place carried to another session (issue 55):
// the link, its page, its claim (303, then MOVED for the old session), and
// every refusal, of the API and of the pages.
func runOpenAPIHandoff(t *testing.T, k *oaChecker, admin string) {
	t.Helper()
	in := k.in
	q := apptest.UniqueID("handoff")
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + q, auth: admin, status: 200, body: map[string]any{"paused": true, "entry": "any"}})
	entries, handoff := "/api/v1/queues/"+q+"/entries", "/api/v1/queues/"+q+"/entries/me/handoff"
	laptop, phone, other := in.SessionCookie(), in.SessionCookie(), in.SessionCookie()
	k.call(t, oaCase{method: "POST", path: entries, cookie: laptop, status: 200})
	k.call(t, oaCase{method: "POST", path: entries, cookie: other, status: 200})
	made := k.call(t, oaCase{method: "POST", path: handoff, cookie: laptop, status: 200})
	link := strings.TrimPrefix(made.Str("url"), in.Base)
	k.call(t, oaCase{method: "POST", path: handoff, auth: in.As("signed"), status: 409, code: "handoff_not_needed"})
	k.call(t, oaCase{method: "POST", path: handoff, cookie: phone, status: 404, code: "not_in_queue"})
	k.call(t, oaCase{method: "POST", path: "/api/v1/queues/nosuchqueue/entries/me/handoff", cookie: laptop, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "POST", path: "/api/v1/queues/bad*name/entries/me/handoff", cookie: laptop, status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: handoff, status: 401, code: "unauthenticated"})

	k.call(t, oaCase{method: "GET", path: link, status: 200})
	k.call(t, oaCase{method: "GET", path: "/q/" + q + "/handoff/not-a-code", status: 410})
	k.call(t, oaCase{method: "GET", path: "/q/nosuchqueue/handoff/" + strings.Repeat("a", 32), status: 404})
	k.call(t, oaCase{method: "GET", path: "/q/bad*name/handoff/" + strings.Repeat("a", 32), status: 400, code: "invalid_queue_name", specInvalid: true})
	self := []string{"Origin", in.Base}
	k.call(t, oaCase{method: "POST", path: link, cookie: phone, headers: []string{"Origin", "https://elsewhere.example"}, status: 403, code: "cross_site_request"})
	k.call(t, oaCase{method: "POST", path: link, cookie: other, headers: self, status: 409})
	k.call(t, oaCase{method: "POST", path: link, cookie: phone, headers: self, status: 303})
	if r := k.call(t, oaCase{method: "GET", path: entries + "/me", cookie: laptop, status: 200}); r.Str("status") != "MOVED" {
		t.Errorf("the session a place moved from: %s, want MOVED", r.Raw)
	}
	k.call(t, oaCase{method: "POST", path: link, cookie: in.SessionCookie(), headers: self, status: 410})
	k.call(t, oaCase{method: "POST", path: "/q/nosuchqueue/handoff/" + strings.Repeat("a", 32), headers: self, status: 404})
	k.call(t, oaCase{method: "POST", path: "/q/bad*name/handoff/" + strings.Repeat("a", 32), headers: self, status: 400, code: "invalid_queue_name", specInvalid: true})

	noScript := "/q/" + q + "/noscript/handoff"
	k.call(t, oaCase{method: "POST", path: noScript, cookie: phone, headers: self, status: 200})
	k.call(t, oaCase{method: "POST", path: noScript, cookie: phone, headers: []string{"Origin", "https://elsewhere.example"}, status: 403, code: "cross_site_request"})
	k.call(t, oaCase{method: "POST", path: "/q/nosuchqueue/noscript/handoff", cookie: phone, headers: self, status: 404})
	k.call(t, oaCase{method: "POST", path: "/q/bad*name/noscript/handoff", cookie: phone, headers: self, status: 400, code: "invalid_queue_name", specInvalid: true})
}

// runOpenAPIStock drives a queue's stock through the admin API and what
// the line answers meanwhile: sold out, a newcomer refused with 410 and
// whoever holds a place answered SOLD_OUT; restocked, the places back, and
// beyondStock for whoever waits behind more people than units.
func runOpenAPIStock(t *testing.T, k *oaChecker, admin string) {
	t.Helper()
	in := k.in
	q := apptest.UniqueID("stock")
	entries, me := "/api/v1/queues/"+q+"/entries", "/api/v1/queues/"+q+"/entries/me"
	soldOut, restock := "/admin/v1/queues/"+q+"/sold-out", "/admin/v1/queues/"+q+"/restock"
	first, second := apptest.UniqueID("first"), apptest.UniqueID("second")
	// Paused: whoever enters stays in line.
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + q, auth: admin, body: map[string]any{"paused": true}, status: 200})
	k.call(t, oaCase{method: "POST", path: entries, auth: in.As(first), status: 200})

	if r := k.call(t, oaCase{method: "POST", path: soldOut, auth: admin, status: 200}); r.Body["soldOut"] != true || r.Body["unitsLeft"] != 0.0 {
		t.Errorf("sold out: %s", r.Raw)
	}
	k.call(t, oaCase{method: "POST", path: entries, auth: in.As(second), status: 410, code: "sold_out"})
	// An anonymous newcomer is told so before any challenge (issue 49).
	k.call(t, oaCase{method: "POST", path: entries, cookie: in.SessionCookie(), status: 410, code: "sold_out"})
	k.call(t, oaCase{method: "GET", path: "/api/v1/queues/" + q + "/challenge", status: 410, code: "sold_out"})
	for _, c := range []oaCase{
		{method: "POST", path: entries, auth: in.As(first), status: 200},
		{method: "GET", path: me, auth: in.As(first), status: 200},
	} {
		if r := k.call(t, c); r.Str("status") != "SOLD_OUT" {
			t.Errorf("%s %s, holding a place in a sold-out queue: %s", c.method, c.path, r.Raw)
		}
	}

	r := k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: map[string]any{"unitsLeft": 1}, status: 200})
	if r.Body["soldOut"] != false || r.Body["unitsLeft"] != 1.0 {
		t.Errorf("restock of 1: %s", r.Raw)
	}
	if r := k.call(t, oaCase{method: "GET", path: me, auth: in.As(first), status: 200}); r.Str("status") != "WAITING" || r.Num("position") != 1 || r.Body["beyondStock"] != nil {
		t.Errorf("the first in line after a restock of 1: %s", r.Raw)
	}
	if r := k.call(t, oaCase{method: "POST", path: entries, auth: in.As(second), status: 200}); r.Num("position") != 2 || r.Body["beyondStock"] != true {
		t.Errorf("second in line for 1 unit: %s", r.Raw)
	}
	// No units given: recounted from the products, and none names this
	// queue: not known.
	for _, body := range []any{nil, map[string]any{}, map[string]any{"unitsLeft": nil}} {
		if r := k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: body, status: 200}); r.Body["unitsLeft"] != nil || r.Body["soldOut"] != false {
			t.Errorf("restock with %v: %s", body, r.Raw)
		}
	}

	for _, path := range []string{soldOut, restock} {
		k.call(t, oaCase{method: "POST", path: strings.Replace(path, q, "nosuchqueue", 1), auth: admin, status: 404, code: "queue_not_found"})
		k.call(t, oaCase{method: "POST", path: strings.Replace(path, q, "bad*name", 1), auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	}
	k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: map[string]any{"unitsLeft": -1}, status: 400, code: "invalid_config", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: map[string]any{"units": 5}, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: restock, auth: admin, body: `{"unitsLeft":1` + strings.Repeat(" ", 5000) + `}`, status: 413, code: "body_too_large"})
}

// runOpenAPISuspects drives the shadow line's admin routes: listed and
// cleared, and what they refuse. Only on Redis does a place get into the
// shadow line here: the test opens the instance's Redis and takes one
// itself (the embedded line lives inside the program, and this instance
// has no signal configured to make a suspect), so only there is one
// listed and cleared (oaCannotOn).
func runOpenAPISuspects(t *testing.T, k *oaChecker, b apptest.Backend, admin string) {
	t.Helper()
	q := apptest.UniqueID("suspects")
	list, clearOf := "/admin/v1/queues/"+q+"/suspects", func(id string) string { return "/admin/v1/queues/" + q + "/suspects/" + id + "/clear" }
	k.call(t, oaCase{method: "PUT", path: "/admin/v1/queues/" + q, auth: admin, body: map[string]any{"paused": true}, status: 200})
	if r := k.call(t, oaCase{method: "GET", path: list, auth: admin, status: 200}); r.Raw != `{"queue":"`+q+`","shadowLength":0,"suspects":[]}`+"\n" {
		t.Errorf("an empty shadow line: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: list + "?limit=1000", auth: admin, status: 200})
	k.call(t, oaCase{method: "GET", path: list + "?limit=0", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: list + "?limit=1001", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: strings.Replace(list, q, "nosuchqueue", 1), auth: admin, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: strings.Replace(list, q, "bad*name", 1), auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: clearOf("1"), auth: admin, status: 404, code: "suspect_not_found"})
	k.call(t, oaCase{method: "POST", path: clearOf("0"), auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: clearOf("bot"), auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: strings.Replace(clearOf("1"), q, "nosuchqueue", 1), auth: admin, status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "POST", path: strings.Replace(clearOf("1"), q, "bad*name", 1), auth: admin, status: 400, code: "invalid_queue_name", specInvalid: true})
	if !b.Redis {
		return
	}
	store := redisstore.New(testenv.RedisClient(t), k.in.KeyPrefix)
	mark := suspect.Mark{Signals: []string{"address_range"}, Address: "3f9a1c0e7b52d4a8"}
	st, err := store.EnterShadow(context.Background(), q, apptest.UniqueID("bot"), mark)
	if err != nil || !st.Shadow {
		t.Errorf("a place in the shadow line: %+v, %v", st, err)
		return
	}
	id := strconv.FormatInt(st.Ticket, 10)
	r := k.call(t, oaCase{method: "GET", path: list, auth: admin, status: 200})
	if got, _ := r.Body["suspects"].([]any); r.Body["shadowLength"] != 1.0 || len(got) != 1 || got[0].(map[string]any)["id"] != id {
		t.Errorf("the shadow line with suspect %s: %s", id, r.Raw)
	}
	if r := k.call(t, oaCase{method: "POST", path: clearOf(id), auth: admin, status: 200}); r.Body["length"] != 1.0 || r.Body["shadowLength"] != 0.0 {
		t.Errorf("suspect %s cleared: %s", id, r.Raw)
	}
	k.call(t, oaCase{method: "POST", path: clearOf(id), auth: admin, status: 404, code: "suspect_not_found"})
}

// oaBodiesRefused sends every operation that takes no body (of gateway mode
// or of serve) a body over the 1 KiB such routes accept: 413 before
// anything else, identity included.
func oaBodiesRefused(t *testing.T, c *oaContract, k *oaChecker, gateway bool, concrete *strings.Replacer) {
	t.Helper()
	big := strings.Repeat("x", 2<<10)
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody != nil || (op.Extensions[oaGateway] != nil) != gateway {
				continue
			}
			if gateway && path == "/return" {
				path += "?to=%2F"
			}
			k.call(t, oaCase{method: method, path: concrete.Replace(path), body: big, status: 413, code: "body_too_large"})
		}
	}
}

// checkConventions checks the promises the document makes in prose, for
// requests no operation describes: HEAD, OPTIONS and TRACE, unknown paths,
// request ids.
func checkConventions(t *testing.T, in *apptest.Instance) {
	t.Helper()
	for _, c := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"HEAD", "/healthz", 200, "", ""},
		{"HEAD", "/api/v1/products/nope", 404, "", ""}, // HEAD of an error: status only
		{"HEAD", "/api/v1/orders", 405, "", "POST"},
		{"OPTIONS", "/healthz", 405, "method_not_allowed", "GET, HEAD"},
		{"TRACE", "/api/v1/queues/default/entries/me", 405, "method_not_allowed", "DELETE, GET, HEAD"},
		{"GET", "/nope", 404, "not_found", ""},
		{"GET", "/admin/v1/nope", 404, "not_found", ""},
		{"POST", "/api/v2/orders", 404, "not_found", ""},
	} {
		r := in.Do(c.method, c.path, "", nil)
		if r.Status != c.status || r.ErrorCode() != c.code || r.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %q Allow %q, want %d %q Allow %q", c.method, c.path, r.Status, r.ErrorCode(),
				r.Header.Get("Allow"), c.status, c.code, c.allow)
		}
		if c.method == "HEAD" && r.Raw != "" {
			t.Errorf("HEAD %s answered a body: %q", c.path, r.Raw)
		}
	}
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for _, sent := range []string{"", strings.Repeat("r", 65)} {
		var hdr []string
		if sent != "" {
			hdr = []string{"X-Request-Id", sent}
		}
		if got := in.Do("GET", "/healthz", "", nil, hdr...).Header.Get("X-Request-Id"); !hex16.MatchString(got) {
			t.Errorf("X-Request-Id for a request that sent %q: %q, want 16 fresh hex digits", sent, got)
		}
	}
	if got := in.Do("GET", "/healthz", "", nil, "X-Request-Id", strings.Repeat("r", 64)).Header.Get("X-Request-Id"); got != strings.Repeat("r", 64) {
		t.Errorf("a 64-character X-Request-Id was not echoed: %q", got)
	}
}

// oaSessionCookie returns "wr_session=…" from an answer that sets it.
func oaSessionCookie(t *testing.T, r apptest.Response) string {
	t.Helper()
	for _, v := range r.Header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(v); err == nil && c.Name == "wr_session" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no wr_session cookie in %q", r.Header.Values("Set-Cookie"))
	return ""
}

// runOpenAPIOutage boots an instance whose Redis and PostgreSQL sit behind
// proxies, then cuts the proxies: every route that needs them answers 503
// with Retry-After.
func runOpenAPIOutage(t *testing.T, c *oaContract, b apptest.Backend, h *oaHits) {
	redisProxy := startCutProxy(t, urlHost(t, testenv.RedisURL(t)))
	pgProxy := startCutProxy(t, urlHost(t, testenv.DatabaseURL(t)))
	in := apptest.Boot(t, b, func(c *app.Config) {
		c.RedisURL = urlWithHost(t, c.RedisURL, redisProxy.addr())
		c.DatabaseURL = urlWithHost(t, c.DatabaseURL, pgProxy.addr())
	})
	k := &oaChecker{c: c, in: in, hit: h}
	admin := in.AdminAuth()
	sale := apptest.Shop{Instance: in}
	q, p := sale.NewSale(5, nil)
	// A named token never checked before the cut: its check needs Redis.
	unchecked := in.Do("POST", "/admin/v1/tokens", admin, map[string]any{"name": "unchecked", "role": "viewer"})
	u := apptest.UniqueID("u")
	tok := sale.Admit(q, u)[u]
	k.call(t, oaCase{method: "GET", path: "/readyz", status: 200})

	// Redis down, PostgreSQL up.
	redisProxy.cut()
	in.WaitStatus("/readyz", 503)
	// The answers before the cut read the queue's config, which the
	// instance keeps for a second (queue.Service.ConfigInForce): a challenge
	// may be issued from it until then, not after.
	in.WaitStatus("/api/v1/queues/"+q+"/challenge", 503)
	entries := "/api/v1/queues/" + q + "/entries"
	for _, m := range []struct {
		method, path, auth string
		body               any
		headers            []string
	}{
		{"POST", entries, in.As(u), nil, nil},
		{"GET", "/api/v1/queues/" + q + "/challenge", "", nil, nil},
		{"GET", "/api/v1/queues/" + q + "/front", "", nil, nil},
		{"GET", "/api/v1/queues/" + q + "/draw", "", nil, nil},
		{"GET", entries + "/me", in.As(u), nil, nil},
		{"DELETE", entries + "/me", in.As(u), nil, nil},
		{"POST", entries + "/me/presence", in.As(u), map[string]any{"hidden": true}, nil},
		{"GET", "/admin/v1/queues", admin, nil, nil},
		{"GET", "/admin/v1/queues/" + q, admin, nil, nil},
		{"PUT", "/admin/v1/queues/" + q, admin, map[string]any{}, nil},
		{"PATCH", "/admin/v1/queues/" + q, admin, map[string]any{"paused": true}, nil},
		{"GET", "/admin/v1/queues/" + q + "/history", admin, nil, nil},
		{"GET", "/admin/v1/queues/" + q + "/rollups", admin, nil, nil},
		{"GET", "/admin/v1/queues/" + q + "/schedule", admin, nil, nil},
		{"GET", "/admin/v1/queues/" + q + "/report", admin, nil, nil},
		{"POST", "/admin/v1/queues/" + q + "/sold-out", admin, nil, nil},
		{"POST", "/admin/v1/queues/" + q + "/restock", admin, map[string]any{"unitsLeft": 5}, nil},
		{"GET", "/admin/v1/queues/" + q + "/suspects", admin, nil, nil},
		{"POST", "/admin/v1/queues/" + q + "/suspects/1/clear", admin, nil, nil},
		{"POST", "/admin/v1/queues/" + q + "/codes", admin, map[string]any{"lane": "invited", "codes": []string{}}, nil},
		{"POST", "/admin/v1/tokens", admin, map[string]any{"name": "during", "role": "viewer"}, nil},
		{"GET", "/admin/v1/tokens", admin, nil, nil},
		{"DELETE", "/admin/v1/tokens/unchecked", admin, nil, nil},
		{"GET", "/admin/v1/queue-settings", "Bearer " + unchecked.Str("token"), nil, nil},
		{"GET", "/admin/v1/audit", admin, nil, nil},
		// The product is read from PostgreSQL, the token from Redis.
		{"POST", "/api/v1/orders", in.As(u), map[string]any{"productId": p, "quantity": 1}, []string{"X-Entry-Token", tok}},
		{"GET", "/readyz", "", nil, nil},
	} {
		r := k.call(t, oaCase{method: m.method, path: m.path, auth: m.auth, body: m.body, headers: m.headers, status: 503, code: "unavailable"})
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Errorf("%s %s: Retry-After %q", m.method, m.path, r.Header.Get("Retry-After"))
		}
	}
	// A handoff's link cannot be made, nor claimed (issue 55).
	k.call(t, oaCase{method: "POST", path: "/api/v1/queues/" + q + "/entries/me/handoff", cookie: in.SessionCookie(), status: 503, code: "unavailable"})
	k.call(t, oaCase{method: "POST", path: "/q/" + q + "/handoff/" + strings.Repeat("a", 32), headers: []string{"Origin", in.Base}, status: 503})
	// The page without JavaScript says so, and tries again.
	if r := k.call(t, oaCase{method: "GET", path: "/q/" + q + "/noscript", auth: in.As(u), status: 503}); r.Header.Get("Retry-After") == "" {
		t.Errorf("the page without JavaScript, store down: no Retry-After")
	}
	// Still alive, and metrics still answer (the store is reported down).
	k.call(t, oaCase{method: "GET", path: "/healthz", status: 200})
	k.call(t, oaCase{method: "GET", path: "/metrics", status: 200})

	// PostgreSQL down too.
	pgProxy.cut()
	for _, m := range []struct {
		method, path, auth string
		body               any
	}{
		{"GET", "/api/v1/products/" + p, "", nil},
		{"PUT", "/admin/v1/products/" + p, admin, map[string]any{"name": "x", "stock": 1}},
		{"GET", "/admin/v1/products", admin, nil},
		{"POST", "/admin/v1/products/" + p + "/restock", admin, map[string]any{"quantity": 1}},
	} {
		k.call(t, oaCase{method: m.method, path: m.path, auth: m.auth, body: m.body, status: 503, code: "unavailable"})
	}
}

// cutProxy forwards TCP connections to a server until cut, after which it
// refuses new connections and has dropped the open ones: to the program
// behind it, the server is gone.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cutOff bool
	wg     sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track remembers both ends, or closes them when already cut.
func (p *cutProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutOff {
		a.Close()
		b.Close()
		return false
	}
	p.conns = append(p.conns, a, b)
	return true
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// cut stops accepting and drops every connection.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutOff {
		return
	}
	p.cutOff = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

func urlHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func urlWithHost(t *testing.T, raw, host string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = host
	return u.String()
}

// runOpenAPIGateway drives gateway mode's own operations, and the API under
// the prefix, through `waitroom proxy` in front of a shop.
func runOpenAPIGateway(t *testing.T, c *oaContract, h *oaHits) {
	p := apptest.BootProxy(t, apptest.Backend{Name: "embedded"}, apptest.NewUpstreamShop(t, 1), nil)
	k := &oaChecker{c: c, in: p.Instance, hit: h, prefix: apptest.GatewayPrefix}
	p.SetPaused(true)
	k.call(t, oaCase{method: "GET", path: "/.well-known/jwks.json", status: 200})
	k.call(t, oaCase{method: "GET", path: "/healthz", status: 200})

	alice := apptest.UniqueID("alice")
	k.call(t, oaCase{method: "POST", path: "/api/v1/queues/default/entries", auth: p.As(alice), status: 200})
	back := "/return?to=" + url.QueryEscape("/checkout?step=2")
	if r := k.call(t, oaCase{method: "GET", path: back, auth: p.As(alice), status: 303}); r.Header.Get("Location") != apptest.GatewayPrefix+"/q/default?return=%2Fcheckout%3Fstep%3D2" {
		t.Errorf("waiting: back to %q, want the waiting page", r.Header.Get("Location"))
	}
	p.Admitted(alice)
	if r := k.call(t, oaCase{method: "GET", path: back, auth: p.As(alice), status: 303}); r.Header.Get("Location") != "/checkout?step=2" || r.Header.Get("Set-Cookie") == "" {
		t.Errorf("READY: %q with cookie %q", r.Header.Get("Location"), r.Header.Get("Set-Cookie"))
	}
	k.call(t, oaCase{method: "GET", path: "/return?to=" + url.QueryEscape("//evil.example"), auth: p.As(alice), status: 400, code: "invalid_return"})
	k.call(t, oaCase{method: "GET", path: "/return?to=" + url.QueryEscape("https://evil.example/"), auth: p.As(alice), status: 400, code: "invalid_return", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/return", auth: p.As(alice), status: 400, code: "invalid_return", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: back, status: 401, code: "unauthenticated"})
	k.call(t, oaCase{method: "GET", path: back, auth: p.As("john doe"), status: 400, code: "invalid_user_id"})
	k.call(t, oaCase{method: "GET", path: back + "&queue=nosuchqueue", auth: p.As(alice), status: 404, code: "queue_not_found"})
	k.call(t, oaCase{method: "GET", path: back + "&queue=bad*name", auth: p.As(alice), status: 400, code: "invalid_queue_name"})
	for path, na := range c.notAllowed {
		for _, method := range na.Methods {
			if c.gatewayOnly(path) {
				k.call(t, oaCase{method: method, path: path, status: 405, code: "method_not_allowed"})
			}
		}
	}
	oaBodiesRefused(t, c, k, true, strings.NewReplacer())
	var missing []string
	for tr := range c.want {
		if c.gatewayOnly(tr.path) && !h.has(tr) {
			missing = append(missing, tr.String())
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("documented but never exercised in gateway mode: %s", m)
	}
}

// runOpenAPITokens drives the named tokens' routes (issue 56): made, shown
// once, refused twice, listed without the token, used below its role
// (403 forbidden_role), revoked, and the refusals of a bad body or name.
func runOpenAPITokens(t *testing.T, k *oaChecker, admin string) {
	t.Helper()
	name := apptest.UniqueID("viewer")
	r := k.call(t, oaCase{method: "POST", path: "/admin/v1/tokens", auth: admin, body: map[string]any{"name": name, "role": "viewer", "expiresAt": "2099-01-01T00:00:00Z"}, status: 201})
	viewer := "Bearer " + r.Str("token")
	k.call(t, oaCase{method: "POST", path: "/admin/v1/tokens", auth: admin, body: map[string]any{"name": name, "role": "admin"}, status: 409, code: "token_exists"})
	k.call(t, oaCase{method: "POST", path: "/admin/v1/tokens", auth: admin, body: map[string]any{"name": "has space", "role": "viewer"}, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: "/admin/v1/tokens", auth: admin, body: map[string]any{"name": "x", "role": "root"}, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "POST", path: "/admin/v1/tokens", auth: admin, body: map[string]any{"name": "x", "role": "viewer", "expiresAt": "2000-01-01T00:00:00Z"}, status: 400, code: "invalid_request"})
	k.call(t, oaCase{method: "POST", path: "/admin/v1/tokens", auth: admin, body: `{"name":"x","role":"viewer"` + strings.Repeat(" ", 5000) + `}`, status: 413, code: "body_too_large"})
	if r := k.call(t, oaCase{method: "GET", path: "/admin/v1/tokens", auth: admin, status: 200}); !strings.Contains(r.Raw, `"name":"`+name+`"`) || strings.Contains(r.Raw, "wr_") {
		t.Errorf("the list: %s", r.Raw)
	}
	k.call(t, oaCase{method: "GET", path: "/admin/v1/tokens", auth: viewer, status: 403, code: "forbidden_role"})
	k.call(t, oaCase{method: "POST", path: "/admin/v1/tokens", auth: viewer, body: map[string]any{"name": "x", "role": "admin"}, status: 403, code: "forbidden_role"})
	k.call(t, oaCase{method: "DELETE", path: "/admin/v1/tokens/" + name, auth: viewer, status: 403, code: "forbidden_role"})
	k.call(t, oaCase{method: "PATCH", path: "/admin/v1/queues/default", auth: viewer, body: map[string]any{"paused": false}, status: 403, code: "forbidden_role"})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/default", auth: viewer, status: 200})
	k.call(t, oaCase{method: "DELETE", path: "/admin/v1/tokens/" + name, auth: admin, status: 204})
	k.call(t, oaCase{method: "DELETE", path: "/admin/v1/tokens/" + name, auth: admin, status: 404, code: "token_not_found"})
	k.call(t, oaCase{method: "DELETE", path: "/admin/v1/tokens/bad*name", auth: admin, status: 400, code: "invalid_request", specInvalid: true})
	k.call(t, oaCase{method: "GET", path: "/admin/v1/queues/default", auth: viewer, status: 401, code: "admin_unauthorized"})
}
