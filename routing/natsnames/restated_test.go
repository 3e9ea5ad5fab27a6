package natsnames

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoSideRestatesTheNames reads the NATS code of both binaries (it lives
// in this workspace next to this module) and fails on a string literal that
// starts with a bucket, stream, subject or key prefix of its own (messages
// that mention a name are fine): those must come from this package, or the
// two sides can drift apart.
func TestNoSideRestatesTheNames(t *testing.T) {
	t.Parallel()
	dirs := []string{
		"../../edge/internal/distrib",
		"../../controlplane/internal/distrib",
		"../../controlplane/internal/natsauth",
	}
	contract := []string{"WEIR_CONFIG", "WEIR_VIEWS", "WEIR_AFFINITY", "WEIR_USAGE", "weir.usage", "weir.cmd", "weir.lease", "$KV.", "KV_WEIR", "tenant."}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			if _, statErr := os.Stat(dir); statErr != nil {
				t.Skipf("%s is not in this checkout: %v", dir, statErr)
			}
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, c := range contract {
					if strings.HasPrefix(s, c) {
						t.Errorf("%s: literal %q restates %q: use weir.dev/routing/natsnames", fset.Position(lit.Pos()), s, c)
					}
				}
				return true
			})
		}
	}
}
