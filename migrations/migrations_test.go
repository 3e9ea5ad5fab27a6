package migrations_test

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"weir.dev/migrations"
)

// TestFilesArePaired checks every version has exactly one up and one down file,
// versions are zero-padded to six digits and run 1..N without gaps.
// Applying them against PostgreSQL is tested in weir.dev/db/schema.
func TestFilesArePaired(t *testing.T) {
	t.Parallel()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^(\d{6})_([a-z0-9_]+)\.(up|down)\.sql$`)
	type pair struct{ Name, Up, Down string }
	byVersion := map[string]*pair{}
	var order []string
	for _, e := range entries {
		m := re.FindStringSubmatch(e.Name())
		if m == nil {
			t.Errorf("file %q is not named NNNNNN_name.(up|down).sql", e.Name())
			continue
		}
		p := byVersion[m[1]]
		if p == nil {
			p = &pair{Name: m[2]}
			byVersion[m[1]] = p
			order = append(order, m[1])
		}
		if p.Name != m[2] {
			t.Errorf("version %s has two names: %q and %q", m[1], p.Name, m[2])
		}
		body, err := fs.ReadFile(migrations.FS, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(body)) == "" {
			t.Errorf("file %s is empty", e.Name())
		}
		if m[3] == "up" {
			p.Up = e.Name()
		} else {
			p.Down = e.Name()
		}
	}
	for i, v := range order {
		p := byVersion[v]
		if p.Up == "" || p.Down == "" {
			t.Errorf("version %s lacks its up or down file: %+v", v, *p)
		}
		if want := fmt.Sprintf("%06d", i+1); v != want {
			t.Errorf("version %s at position %d, want %s (no gaps)", v, i+1, want)
		}
	}
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uint(len(order)), latest); diff != "" {
		t.Errorf("Latest() mismatch (-want +got):\n%s", diff)
	}
}

// TestNoExplicitTransactions guards the one-implicit-transaction-per-file
// contract of the package doc.
func TestNoExplicitTransactions(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`(?im)^\s*(BEGIN|COMMIT|ROLLBACK)\s*;`)
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		if loc := re.FindIndex(body); loc != nil {
			t.Errorf("%s: explicit transaction control %q", path, body[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
