package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed ui
var files embed.FS

// Path is where the admin API mounts the page; its assets live under it
// (Path + "/app.js" and so on).
const Path = "/__admin/ui"

// CSP is the Content-Security-Policy of every file served: scripts,
// styles, images and fetches from the page's own origin only, no inline
// script or style, no framing (against clickjacking of the reset
// button), no form posts anywhere.
const CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'"

// asset is one embedded file, read once at start.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

var assets = load()

func load() map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(files, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "ui/")
		if name == "index.html" {
			name = ""
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		out[name] = asset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in: failing here is a broken build.
		panic("dashboard: embedded files unreadable: " + err.Error())
	}
	return out
}

// Assets returns the paths the dashboard answers, Path first, so that a
// router can register each exactly and leave every other path to its own
// 404.
func Assets() []string {
	out := []string{Path}
	for name := range assets {
		if name != "" {
			out = append(out, Path+"/"+name)
		}
	}
	return out
}

// Serves reports whether path is one the dashboard answers: the page and
// its assets, which hold nothing secret (the page asks the admin API for
// everything it shows), so an admin token need not guard them.
func Serves(path string) bool {
	name, ok := strings.CutPrefix(path, Path)
	if !ok {
		return false
	}
	if name != "" {
		if name, ok = strings.CutPrefix(name, "/"); !ok || name == "" {
			return false
		}
	}
	_, found := assets[name]
	return found
}

// Handler serves the page and its assets at the paths Assets returns
// (GET and HEAD). A path it does not know gets a 404. It is safe for
// concurrent use.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	if !Serves(r.URL.Path) {
		http.NotFound(w, r)
		return
	}
	a := assets[strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, Path), "/")]
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Type", a.ctype)
	// Revalidated on every load (a 304 when unchanged), so a new binary's
	// page is never mixed with an old cached script.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
