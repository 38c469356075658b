package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v4"
)

func TestErrorTable(t *testing.T) {
	t.Parallel()
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	for _, e := range errorTable {
		if !snake.MatchString(e.row.code) {
			t.Errorf("%v: code %q is not snake_case", e.err, e.row.code)
		}
		if e.row.status < 400 || e.row.status > 599 {
			t.Errorf("%v: status %d is not an error", e.err, e.row.status)
		}
		if e.row.status >= 500 && e.row.retryAfter == 0 {
			t.Errorf("%v: a 5xx answer should say when to retry", e.err)
		}
		// Wrapped sentinels (errWith) keep their row.
		if row, ok := lookupError(errWith(e.err, "detail")); !ok || row != e.row {
			t.Errorf("%v wrapped: %+v, %v; want %+v", e.err, row, ok, e.row)
		}
	}
}

func TestWriteErrorHidesUnexpected(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := &Server{logger: logger, errLog: newErrorLog(logger)}
	w := httptest.NewRecorder()
	s.writeError(w, httptest.NewRequest("GET", "/", nil), errors.New("dial tcp 10.0.0.7:6379: secret detail"))
	var body map[string]apiError
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if w.Code != 500 || body["error"].Code != "internal" || body["error"].Message != "internal error" {
		t.Fatalf("got %d %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// apiError is the one error shape: {"error":{"code":"…","message":"…"}}.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TestErrorTableInTheSpec: every code the table answers with is one
// openapi.yaml's ErrorCode lists, so a new row cannot answer with a code
// the document does not know.
func TestErrorTableInTheSpec(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `yaml:"enum"`
				} `yaml:"ErrorCode"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	codes := doc.Components.Schemas.ErrorCode.Enum
	if len(codes) < 10 {
		t.Fatalf("openapi.yaml's ErrorCode lists %d codes: not found where looked", len(codes))
	}
	for _, e := range errorTable {
		if !slices.Contains(codes, e.row.code) {
			t.Errorf("%v answers %q, which openapi.yaml's ErrorCode does not list", e.err, e.row.code)
		}
	}
}
