package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/queue"
)

// decode runs decodeJSON on body into a fresh T.
func decode[T any](body []byte) (T, error) {
	var v T
	r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	err := decodeJSON(httptest.NewRecorder(), r, &v)
	return v, err
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	big := `{"productId":"` + strings.Repeat("a", maxBody) + `","quantity":1}`
	cases := []struct {
		name    string
		body    string
		want    orderRequestJSON
		wantErr error
	}{
		{name: "object", body: `{"productId":"p1","quantity":2}`, want: orderRequestJSON{"p1", 2}},
		{name: "white space around", body: " \n\t{\"productId\":\"p1\"}\r\n ", want: orderRequestJSON{ProductID: "p1"}},
		{name: "empty object", body: `{}`},
		{name: "exactly maxBody", body: `{"productId":"` + strings.Repeat("a", maxBody-len(`{"productId":""}`)) + `"}`,
			want: orderRequestJSON{ProductID: strings.Repeat("a", maxBody-len(`{"productId":""}`))}},

		{name: "empty", body: ``, wantErr: errBadRequest},
		{name: "null", body: `null`, wantErr: errBadRequest},
		{name: "array", body: `[]`, wantErr: errBadRequest},
		{name: "string", body: `"x"`, wantErr: errBadRequest},
		{name: "number", body: `1`, wantErr: errBadRequest},
		{name: "truncated", body: `{"productId":`, wantErr: errBadRequest},
		{name: "not JSON", body: `productId=p1`, wantErr: errBadRequest},
		{name: "two objects", body: `{}{}`, wantErr: errBadRequest},
		{name: "trailing garbage", body: `{} x`, wantErr: errBadRequest},
		{name: "unknown field", body: `{"productId":"p1","price":0}`, wantErr: errBadRequest},
		{name: "wrong type string", body: `{"quantity":"1"}`, wantErr: errBadRequest},
		{name: "wrong type number", body: `{"productId":1}`, wantErr: errBadRequest},
		{name: "fraction", body: `{"quantity":1.5}`, wantErr: errBadRequest},
		{name: "overflow", body: `{"quantity":1e30}`, wantErr: errBadRequest},
		{name: "object in field", body: `{"productId":{}}`, wantErr: errBadRequest},

		{name: "over maxBody", body: big, wantErr: errTooLarge},
		{name: "over maxBody garbage", body: strings.Repeat("x", maxBody+1), wantErr: errTooLarge},
		{name: "over maxBody trailing space", body: "{}" + strings.Repeat(" ", maxBody), wantErr: errTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := decode[orderRequestJSON]([]byte(c.body))
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("decodeJSON(%.40q) = %v; want %v", c.body, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("decodeJSON(%.40q) = %+v, %v; want %+v", c.body, got, err, c.want)
			}
		})
	}
}

// fuzzDecode checks decodeJSON's contract for one body type: it never
// panics; errors are only invalid_request or body_too_large; a body over
// maxBody is always too large; an accepted body is one JSON object that the
// standard decoder reads the same way.
func fuzzDecode[T any](t *testing.T, body []byte) (T, bool) {
	got, err := decode[T](body)
	if len(body) > maxBody {
		if !errors.Is(err, errTooLarge) {
			t.Fatalf("%d-byte body: %v; want errTooLarge", len(body), err)
		}
		return got, false
	}
	if err != nil {
		if !errors.Is(err, errBadRequest) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		return got, false
	}
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(body) || len(trimmed) == 0 || trimmed[0] != '{' {
		t.Fatalf("accepted %q, which is not one JSON object", body)
	}
	var again T
	if err := json.Unmarshal(body, &again); err != nil {
		t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
	}
	if !reflect.DeepEqual(got, again) {
		t.Fatalf("decoded %+v, encoding/json %+v", got, again)
	}
	return got, true
}

func FuzzDecodeOrderBody(f *testing.F) {
	for _, s := range []string{
		`{"productId":"p1","quantity":1}`, `{}`, `null`, `[]`, `{"productId":1}`, `{"quantity":"1"}`,
		`{"quantity":1e30}`, `{"quantity":-1}`, `{"extra":true}`, `{}{}`, `{"productId":"\u0000"}`,
		"{\"productId\":\"\xff\"}", `{"productId":"p","productId":"q"}`, strings.Repeat("[", 5000),
		`{"productId":"` + strings.Repeat("a", 5000) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode[orderRequestJSON](t, body)
	})
}

// FuzzDecodeQueueConfigBody: whatever the body, reading it as settings and
// applying them never panics, errors are only the documented kinds, and a
// config Validate accepts is one the contract allows.
func FuzzDecodeQueueConfigBody(f *testing.F) {
	for _, s := range []string{
		`{"ratePerSecond":100,"batchSize":10,"intervalMs":100,"capacity":100000,"tokenTtlSeconds":300,"paused":false}`,
		`{"paused":true}`, `{"ratePerSecond":-1}`, `{"batchSize":0}`, `{"intervalMs":9223372036854775807}`,
		`{"intervalMs":-9223372036854775808}`, `{"tokenTtlSeconds":9223372036854775807}`, `{"ratePerSecond":1e308}`,
		`{"ratePerSecond":1e400}`, `{"ratePerSecond":null}`, `{"paused":"yes"}`, `{"rate":1}`, `null`, `{`,
		`{"adaptive":true,"minRatePerSecond":5,"maxRatePerSecond":50,"targetLatencyMs":250}`,
		`{"minRatePerSecond":50,"maxRatePerSecond":5}`, `{"abandonAfterSeconds":7}`, `{"abandonAfterSeconds":0}`,
		`{"opensAt":"2026-12-24T20:00:00+09:00"}`, `{"opensAt":"tomorrow"}`, `{"opensAt":""}`, `{"opensAt":5}`,
		`{"rateDerivation":"x"}`, `{"targetLatencyMs":-1}`,
		`{"entry":"signed","challengeCost":2000}`, `{"entry":"everyone"}`, `{"entry":""}`, `{"entry":1}`,
		`{"challengeCost":9}`, `{"challengeCost":1.5}`, `{"admitPerUnit":0}`, `{"admitPerUnit":0.05}`, `{"admitPerUnit":2.5}`,
	} {
		f.Add([]byte(s))
	}
	costSetting, _ := queue.SettingNamed("challengeCost")
	maxCost := costSetting.Max
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("PATCH", "/", bytes.NewReader(body))
		changes, err := decodeSettings(httptest.NewRecorder(), r)
		if err != nil {
			if !errors.Is(err, errBadRequest) && !errors.Is(err, errTooLarge) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		c, err := queue.Apply(queue.DefaultConfig(), changes)
		if err != nil {
			if !errors.Is(err, queue.ErrInvalidConfig) {
				t.Fatalf("Apply: unexpected error kind: %v", err)
			}
			return
		}
		if err := c.Validate(); err == nil {
			if c.RatePerSecond <= 0 || c.BatchSize < 1 || c.Interval <= 0 || c.Capacity < 1 || c.TokenTTL <= 0 ||
				c.MinRate > c.MaxRate || c.TargetLatency <= 0 || c.AbandonAfter != 0 && c.AbandonAfter < 15*time.Second ||
				!slices.Contains([]queue.JoinPolicy{queue.JoinAny, queue.JoinChallenge, queue.JoinSigned}, c.Join) ||
				float64(c.ChallengeCost) < costSetting.Min || float64(c.ChallengeCost) > maxCost {
				t.Fatalf("Validate accepted %+v", c)
			}
		}
	})
}

func FuzzDecodeProductBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"Ticket","stock":10,"queue":"default"}`, `{"name":"x"}`, `{"stock":-1}`, `{"stock":"1"}`,
		`{"stock":1.5}`, `{"name":null,"stock":null}`, `{"queue":"a{b}","name":"n","stock":1}`, `{"id":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode[productRequestJSON](t, body)
	})
}
