package app_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/app"
)

// exampleBrand is the repository's example of a shop's own waiting page
// (docs/page.md): its own template, look and assets, and a template of its
// own for the queue vip.
const exampleBrand = "../../examples/page"

// A template waitroom cannot serve stops the start, naming its file and
// line: a syntax error, a page without the status block, and a queue's
// template with either.
func TestPageDirStopsTheStart(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(filepath.Join(exampleBrand, "waiting.html"))
	if err != nil {
		t.Fatal(err)
	}
	status := `{{template "waitroom.status" .}}`
	tests := []struct {
		name, file, text, want string
	}{
		{"syntax error", "waiting.html", strings.Replace(string(good), status, status+"\n  {{if .Queue}}", 1),
			`waiting.html:\d+: unexpected EOF`},
		{"no status block", "waiting.html", strings.Replace(string(good), status, "", 1),
			`waiting.html:\d+: the page never places \{\{template "waitroom.status" \.\}\}`},
		{"a queue's template with a syntax error", "queues/vip/waiting.html", strings.Replace(string(good), "<title>", "<title>{{end}}", 1),
			`queues/vip/waiting.html:\d+: unexpected \{\{end\}\}`},
		{"a queue's template without the status block", "queues/vip/waiting.html", strings.Replace(string(good), status, "", 1),
			`queues/vip/waiting.html:\d+: the page never places \{\{template "waitroom.status" \.\}\}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string]string{"waiting.html": string(good), tt.file: tt.text}
			for _, asset := range []string{"brand.css", "logo.svg"} {
				b, err := os.ReadFile(filepath.Join(exampleBrand, "assets", asset))
				if err != nil {
					t.Fatal(err)
				}
				files["assets/"+asset] = string(b)
			}
			for name, text := range files {
				path := filepath.Join(dir, name)
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := app.Parse([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--page-dir", dir},
				func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			m := &app.Main{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
			err = m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatal("started with a broken template")
			}
			want := regexp.MustCompile(`^--page-dir: ` + regexp.QuoteMeta(dir) + `/` + tt.want)
			if !want.MatchString(err.Error()) {
				t.Errorf("start failed with %q, want it to match %s", err, want)
			}
		})
	}
}
