package pgtest

import (
	"strings"
	"testing"
	"testing/fstest"

	"weir.dev/migrations"
)

// TestTemplateNameFollowsTheMigrations checks the template's name changes
// whenever a migration file's contents or name change, or a file is added,
// and only then.
func TestTemplateNameFollowsTheMigrations(t *testing.T) {
	t.Parallel()
	base := fstest.MapFS{
		"000001_init.up.sql":   {Data: []byte("CREATE TABLE a (id int);")},
		"000001_init.down.sql": {Data: []byte("DROP TABLE a;")},
	}
	name := func(fsys fstest.MapFS) string {
		t.Helper()
		n, err := templateName(fsys)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(n, templatePrefix) || len(n) > 63 {
			t.Fatalf("template name %q lacks the prefix or is too long for PostgreSQL", n)
		}
		return n
	}
	with := func(k, v string) fstest.MapFS {
		m := fstest.MapFS{}
		for name, f := range base {
			m[name] = f
		}
		m[k] = &fstest.MapFile{Data: []byte(v)}
		return m
	}
	got := name(base)
	if again := name(with("000001_init.up.sql", "CREATE TABLE a (id int);")); again != got {
		t.Errorf("same files, names %s and %s", got, again)
	}
	for what, fsys := range map[string]fstest.MapFS{
		"changed contents": with("000001_init.up.sql", "CREATE TABLE a (id bigint);"),
		"added migration":  with("000002_more.up.sql", "CREATE TABLE b (id int);"),
	} {
		if n := name(fsys); n == got {
			t.Errorf("%s: the template name stayed %s", what, n)
		}
	}
}

// TestTemplateIsNotConnectable checks the template New copies exists, is
// marked a template and takes no connections (so copying it never waits on
// one).
func TestTemplateIsNotConnectable(t *testing.T) {
	t.Parallel()
	pool := New(t)
	want, err := templateName(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	var isTemplate, allowConn bool
	if err := pool.QueryRow(t.Context(), "SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1", want).Scan(&isTemplate, &allowConn); err != nil {
		t.Fatalf("template %s: %v", want, err)
	}
	if !isTemplate || allowConn {
		t.Errorf("template %s: datistemplate %v, datallowconn %v; want true, false", want, isTemplate, allowConn)
	}
}
