package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRunExitCodes checks main's wiring: help exits 0 on stdout, bad usage
// exits 2 on stderr.
func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		if k == "WEIR_CONFIG_DIR" {
			return t.TempDir()
		}
		return ""
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, getenv, strings.NewReader(""), &out, &errOut); code != 0 || !strings.Contains(out.String(), "usage: weir") {
		t.Errorf("--help: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"no-such-command"}, getenv, strings.NewReader(""), &out, &errOut); code != 2 || out.Len() != 0 {
		t.Errorf("unknown command: exit %d, stdout %q", code, out.String())
	}
	if !strings.Contains(errOut.String(), `error: unknown command "weir no-such-command"`) {
		t.Errorf("stderr %q", errOut.String())
	}
}
