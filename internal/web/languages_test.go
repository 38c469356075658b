package web_test

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/internal/web"
)

func TestChooseLanguage(t *testing.T) {
	s := newSite(t, web.Options{})
	has := func(code string) bool { return slices.Contains(web.PageLanguages(), code) }
	or := func(code, fallback string) string {
		if has(code) {
			return code
		}
		return fallback
	}
	tests := []struct {
		name, query, acceptLanguage, want string
	}{
		{"nothing asked", "", "", "en"},
		{"Korean", "", "ko", "ko"},
		{"Korean with region", "", "ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", "ko"},
		{"English first", "", "en-US,en;q=0.9,ko;q=0.8", "en"},
		{"higher q wins over order", "", "en;q=0.5, ko;q=0.9", "ko"},
		{"unsupported only", "", "sw-KE,tlh;q=0.9", "en"},
		{"unsupported first", "", "sw,ko;q=0.5", "ko"},
		{"q=0 means not this", "", "ko;q=0,sw", "en"},
		{"malformed header", "", "ko;q=abc,,,=", "en"},
		{"case", "", "KO-kr", "ko"},
		{"query overrides", "lang=en", "ko-KR", "en"},
		{"query Korean", "lang=ko", "en", "ko"},
		{"unsupported query ignored", "lang=sw", "ko", "ko"},
		{"malformed query ignored", "lang=%%%", "ko", "ko"},
		// Regional variants find their language.
		{"Mexican Spanish", "", "es-MX,es;q=0.9", or("es", "en")},
		{"Latin American Spanish", "", "es-419", or("es", "en")},
		{"Egyptian Arabic", "", "ar-EG", or("ar", "en")},
		{"European Portuguese", "", "pt-PT", or("pt-BR", "en")},
		{"Japanese", "", "ja-JP", or("ja", "en")},
		{"Canadian French", "", "fr-CA", or("fr", "en")},
		{"Swiss German", "", "de-CH", or("de", "en")},
		{"mainland Chinese", "", "zh-CN", or("zh-Hans", "en")},
		{"Singapore Chinese", "", "zh-SG", or("zh-Hans", "en")},
		// Traditional Chinese readers never get Simplified.
		{"Taiwanese Chinese", "", "zh-TW", or("zh-Hant", "en")},
		{"Hong Kong Chinese", "", "zh-HK", or("zh-Hant", "en")},
		{"zh-TW then Korean", "", "zh-TW,ko;q=0.5", or("zh-Hant", "ko")},
		{"query zh-TW", "lang=zh-TW", "", or("zh-Hant", "en")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/?"+tt.query, nil)
			if tt.acceptLanguage != "" {
				r.Header.Set("Accept-Language", tt.acceptLanguage)
			}
			if got := s.ChooseLanguage(r); got != tt.want {
				t.Errorf("ChooseLanguage(?%s, %q) = %q, want %q", tt.query, tt.acceptLanguage, got, tt.want)
			}
		})
	}
}
