package main

import (
	"bytes"
	"context"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	env := func(k string) string {
		if k == "DATABASE_URL" {
			return "postgres://u@db.invalid/x"
		}
		return ""
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
	}{
		{"ensure prints only the DSN", []string{"ensure"}, 0, "postgres://u@db.invalid/x\n"},
		{"no command", nil, 2, ""},
		{"unknown command", []string{"start"}, 2, ""},
		{"unknown flag", []string{"ensure", "-x"}, 2, ""},
		{"stray argument", []string{"ensure", "extra"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, env, &stdout, &stderr)
			if code != tc.wantCode || stdout.String() != tc.wantStdout {
				t.Errorf("run(%q) = %d, stdout %q (stderr %q); want %d, %q", tc.args, code, stdout.String(), stderr.String(), tc.wantCode, tc.wantStdout)
			}
		})
	}
}
