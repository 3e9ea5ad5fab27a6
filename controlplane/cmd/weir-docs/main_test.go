package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir.dev/controlplane/internal/cli"
)

// TestWritesTheCLIsMarkdown checks that weir-docs writes what the CLI's
// generator gives, to stdout or to -o, and refuses stray arguments.
func TestWritesTheCLIsMarkdown(t *testing.T) {
	t.Parallel()
	var want bytes.Buffer
	if err := cli.WriteMarkdown(&want); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(nil, &stdout, &stderr); code != 0 || stdout.String() != want.String() {
		t.Fatalf("stdout: exit %d, %d bytes, want %d; stderr %s", code, stdout.Len(), want.Len(), stderr.String())
	}
	out := filepath.Join(t.TempDir(), "cli.md")
	if code := run([]string{"-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("-o: exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != want.String() {
		t.Errorf("-o wrote %d bytes (%v), want %d", len(b), err, want.Len())
	}
	if !strings.Contains(want.String(), "### weir calls list") {
		t.Errorf("no section for weir calls list")
	}
	if code := run([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("stray argument: exit %d, want 2", code)
	}
}
