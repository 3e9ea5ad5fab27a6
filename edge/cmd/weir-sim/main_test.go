package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderrIn string
	}{
		{"one scenario", []string{"-scenario", "0.5x-equal", "-duration", "1m", "-seed", "3"}, 0,
			[]string{"### 0.5x equal members", "| policy | calls | caller-visible 429s |", "| weir |", "| round robin, 5 s cooldown |", "| weighted random, no headers |", "seed 3."}, ""},
		{"two edges shared", []string{"-scenario", "two-edges-shared", "-duration", "2m"}, 0,
			[]string{"### Two edges sharing", "| weir: each edge counts against its share", "| per edge: each edge counts against the whole limit", "declared rpm"}, ""},
		{"unknown scenario", []string{"-scenario", "nope"}, 2, nil, `unknown scenario "nope"`},
		{"bad flag", []string{"-bogus"}, 2, nil, "flag provided but not defined"},
		{"short duration", []string{"-duration", "10s"}, 2, nil, "shorter than a minute"},
		{"extra argument", []string{"extra"}, 2, nil, "unexpected arguments"},
		{"help", []string{"-h"}, 0, nil, "-scenario"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			if code := run(context.Background(), tc.args, &out, &errOut); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			if !strings.Contains(errOut.String(), tc.stderrIn) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderrIn, errOut.String())
			}
		})
	}
}
