package console

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The console asks the admin API; it does not use the control plane's
// domain packages. Its code (the non-test files of this package, and of the
// weir.dev packages they import, transitively) may import only these
// weir.dev packages; anything else, above all
// weir.dev/controlplane/internal/{provider,snapshot,store,admin/...}, fails
// TestConsoleImportsNoDomainPackage. Each entry says why it is allowed.
var allowedImports = map[string]string{
	"weir.dev/proto/gen/": "the admin API's generated messages and Connect clients (prefix: every generated package)",
	"weir.dev/web":        "the views: templ components and their view models",
	"weir.dev/routing/formats": "the one table of the names of wire formats and auth kinds " +
		"(data only, generated types only)",
	"weir.dev/routing/rules": "only its names (see allowedNames): the name a plain record's endpoint goes by",
	"weir.dev/controlplane/internal/words": "presentation: the words people read for the API's enums " +
		"(and their inverse, to read a form)",
	"weir.dev/controlplane/internal/money": "presentation: decimal dollar text to and from the API's integer " +
		"money units, exactly",
	"weir.dev/controlplane/internal/usageexport": "presentation: the usage export file, the same bytes as " +
		"`weir usage export` writes from the API's rows",
	"weir.dev/controlplane/internal/sakey": "the shape of a Google service account key, checked before upload " +
		"exactly as the admin API checks it once a member signs with the secret (no domain logic)",
}

// allowedNames restricts what the console's own files use of an allowed
// package, by import path (packages not listed: any name).
var allowedNames = map[string][]string{
	"weir.dev/routing/rules": {"PrimaryMember"},
}

// forbiddenExamples must never be allowed, whatever is added above.
var forbiddenExamples = []string{
	"weir.dev/controlplane/internal/provider",
	"weir.dev/controlplane/internal/snapshot",
	"weir.dev/controlplane/internal/store",
	"weir.dev/controlplane/internal/admin",
	"weir.dev/controlplane/internal/admin/apierr",
}

func importAllowed(path string) bool {
	for p := range allowedImports {
		if path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// repoRoot is the workspace root: every weir.dev module is the directory
// of its name under it (weir.dev/web is web/).
var repoRoot = filepath.Join("..", "..", "..")

// dirOf is the directory of a weir.dev package.
func dirOf(path string) string {
	return filepath.Join(repoRoot, filepath.FromSlash(strings.TrimPrefix(path, "weir.dev/")))
}

// nonTestFiles parses a directory's non-test Go files, by file name,
// imports only unless full.
func nonTestFiles(t *testing.T, dir string, full bool) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	mode := parser.ImportsOnly
	if full {
		mode = parser.SkipObjectResolution
	}
	out := map[string]*ast.File{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), n, nil, mode)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = f
	}
	return out
}

func weirImports(t *testing.T, f *ast.File) []string {
	t.Helper()
	var out []string
	for _, is := range f.Imports {
		p, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(p, "weir.dev/") {
			out = append(out, p)
		}
	}
	return out
}

func TestConsoleImportsNoDomainPackage(t *testing.T) {
	for _, p := range forbiddenExamples {
		if importAllowed(p) {
			t.Errorf("allowedImports allows %s, a domain package", p)
		}
	}
	// Walk the weir.dev packages the console's code reaches.
	seen := map[string]string{} // package: the package importing it
	queue := []string{"weir.dev/controlplane/internal/console"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, f := range nonTestFiles(t, dirOf(pkg), false) {
			for _, p := range weirImports(t, f) {
				if _, ok := seen[p]; ok {
					continue
				}
				seen[p] = pkg
				if !importAllowed(p) {
					t.Errorf("%s imports %s, which the console may not use (allowedImports)", pkg, p)
					continue
				}
				queue = append(queue, p)
			}
		}
	}
	if _, ok := seen["weir.dev/web"]; !ok {
		t.Fatal("the walk did not find weir.dev/web: is the workspace layout different?")
	}
}

func TestConsoleUsesOnlyAllowedNames(t *testing.T) {
	for name, f := range nonTestFiles(t, ".", true) {
		local := map[string]string{} // file's name of the package: path
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			if _, ok := allowedNames[p]; !ok {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if is.Name != nil {
				name = is.Name.Name
			}
			local[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && local[id.Name] != "" && !slices.Contains(allowedNames[local[id.Name]], sel.Sel.Name) {
				t.Errorf("%s uses %s.%s; allowed of %s: %v", name, id.Name, sel.Sel.Name, local[id.Name], allowedNames[local[id.Name]])
			}
			return true
		})
	}
}
