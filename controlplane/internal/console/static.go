package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"weir.dev/web"
)

// staticFiles serves web.Static under /console/static/ with a strong ETag
// (content hash) and a short public cache life; a changed file is picked up
// after at most staticMaxAge, or at once on revalidation.
type staticFiles struct {
	files map[string]staticFile
}

type staticFile struct {
	body  []byte
	etag  string
	ctype string
}

const staticMaxAge = 10 * time.Minute

func newStatic() (*staticFiles, error) {
	s := &staticFiles{files: map[string]staticFile{}}
	err := fs.WalkDir(web.Static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web.Static, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // not left to the machine's mime tables
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		s.files[strings.TrimPrefix(p, "static/")] = staticFile{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ct}
		return nil
	})
	return s, err
}

func (s *staticFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/console/static/")
	f, ok := s.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(staticMaxAge/time.Second)))
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}
