package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// The operator's static files: DIR/assets/, served at /assets/custom/ (under
// the prefix in gateway mode). They are read once, at start, so what is
// served is what was checked, and each gets an ETag from its content; the
// page's templates name them with {{asset "logo.svg"}}, a URL carrying
// that tag, which browsers may keep for a year.

// Limits on DIR/assets: a waiting page's logo, styles and a font or two,
// not a site.
const (
	maxAssetFiles = 1000
	maxAssetBytes = 64 << 20
)

// assetCSP is sent with every asset: an SVG or HTML file opened on its own
// runs nothing.
const assetCSP = "default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self'; sandbox"

type asset struct {
	data        []byte
	etag        string // quoted, as the header carries it
	version     string // the etag's hex, for ?v=
	contentType string
	modified    time.Time
}

// assetSet is the operator's files by path below assets/ ("css/brand.css").
type assetSet struct {
	dir   string
	files map[string]*asset
}

// loadAssets reads dir/assets (none: an empty set). Hidden files are left
// out.
func loadAssets(dir string) (*assetSet, error) {
	a := &assetSet{files: map[string]*asset{}}
	if dir == "" {
		return a, nil
	}
	a.dir = filepath.Join(dir, "assets")
	root := os.DirFS(a.dir)
	total := 0
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." && os.IsNotExist(err) {
				return fs.SkipAll // no assets/: fine
			}
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += len(b)
		if len(a.files) >= maxAssetFiles || total > maxAssetBytes {
			return fmt.Errorf("more than %d files or %d MiB: the assets of a waiting page, not a site", maxAssetFiles, maxAssetBytes>>20)
		}
		sum := sha256.Sum256(b)
		v := hex.EncodeToString(sum[:8])
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = http.DetectContentType(b)
		}
		a.files[p] = &asset{data: b, etag: `"` + v + `"`, version: v, contentType: ct, modified: info.ModTime()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.dir, err)
	}
	return a, nil
}

// url is the versioned URL of the asset at name ("logo.svg"), or an error
// when there is no such file.
func (a *assetSet) url(base, name string) (string, error) {
	f, ok := a.files[strings.TrimPrefix(name, "/")]
	if !ok {
		if a.dir == "" {
			return "", fmt.Errorf("asset %q: no --page-dir, so no assets", name)
		}
		return "", fmt.Errorf("asset %q: no such file in %s", name, a.dir)
	}
	return base + "/assets/custom/" + strings.TrimPrefix(name, "/") + "?v=" + f.version, nil
}

// serve answers GET /assets/custom/{path...}: the file with its ETag (a
// matching If-None-Match gets 304), kept for a year when asked for by its
// version, else revalidated.
func (a *assetSet) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := a.files[r.PathValue("path")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("ETag", f.etag)
	if r.URL.Query().Get("v") == f.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, no-cache")
	}
	h.Set("Content-Type", f.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", assetCSP)
	http.ServeContent(w, r, "", f.modified, bytes.NewReader(f.data))
}
