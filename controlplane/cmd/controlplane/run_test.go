package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"weir.dev/controlplane/internal/auth"
	"weir.dev/db/pgtest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestRunUsageAndKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{"unknown command", []string{"frobnicate"}, nil, exitBadArgs, "unknown command"},
		{"bad flag", []string{"serve", "--nope"}, nil, exitBadArgs, "flag provided but not defined"},
		{"bad log format", []string{"serve", "--database-url", "postgres://x", "--log-format", "xml"}, nil, exitBadArgs, `--log-format "xml"`},
		{"bad log level from env", []string{"migrate", "--database-url", "postgres://x"}, map[string]string{"WEIR_LOG_LEVEL": "chatty"}, exitBadArgs, `--log-level "chatty"`},
		{"extra argument", []string{"migrate", "--database-url", "postgres://x", "junk"}, nil, exitBadArgs, "unexpected arguments"},
		{"no database", []string{"serve"}, nil, exitBadArgs, "no database"},
		{"bad listen address", []string{"--listen", "nonsense", "--database-url", "postgres://x"}, nil, exitBadArgs, "listen address"},
		{"no master key", []string{"serve", "--database-url", "postgres://x"}, nil, exitFail, "WEIR_MASTER_KEY is not set"},
		{"bad master key", []string{"serve"}, map[string]string{"DATABASE_URL": "postgres://x", "WEIR_MASTER_KEY": "short"}, exitFail, "WEIR_MASTER_KEY"},
		{"help", []string{"bootstrap-admin", "-h"}, nil, exitOK, "-force"},
		{"no config signing key", []string{"serve"}, map[string]string{"DATABASE_URL": "postgres://x", "WEIR_MASTER_KEY": strings.Repeat("ab", 32),
			"WEIR_EDGE_KEY": strings.Repeat("cd", 32)}, exitFail, "WEIR_CONFIG_SIGNING_KEY is not set"},
		{"unauthenticated NATS", []string{"serve", "--database-url", "postgres://x", "--nats-url", "nats://127.0.0.1:4222"}, nil, exitBadArgs, "unauthenticated"},
		{"plain-text NATS", []string{"serve", "--database-url", "postgres://x", "--nats-url", "nats://127.0.0.1:4222", "--nats-user", "u", "--nats-password", "p"}, nil, exitBadArgs, "plain text"},
		{"user without password", []string{"serve", "--database-url", "postgres://x", "--nats-url", "nats://n:4222", "--nats-user", "u", "--nats-insecure"}, nil, exitBadArgs, "go together"},
		{"no config signing key to print", []string{"config-public-key"}, nil, exitFail, "WEIR_CONFIG_SIGNING_KEY is not set"},
		{"tls cert without key", []string{"serve", "--database-url", "postgres://x", "--tls-cert", "c.pem"}, nil, exitBadArgs, "--tls-cert and --tls-key go together"},
		{"tls key from env without cert", []string{"serve", "--database-url", "postgres://x"}, map[string]string{"WEIR_CP_TLS_KEY": "k.pem"}, exitBadArgs, "--tls-cert and --tls-key go together"},
		{"R-SEC-2 bad tenant loopback port", []string{"serve", "--database-url", "postgres://x", "--tenant-loopback-ports", "8000,70000"}, nil, exitBadArgs, `port "70000"`},
		{"R-SEC-2 bad tenant loopback port from env", []string{"serve", "--database-url", "postgres://x"}, map[string]string{"WEIR_TENANT_LOOPBACK_PORTS": "x"}, exitBadArgs, "--tenant-loopback-ports"},
		{"R-CAP-2 default tenant max in flight zero", []string{"serve", "--database-url", "postgres://x", "--default-tenant-max-in-flight", "0"}, nil, exitBadArgs, "--default-tenant-max-in-flight"},
		{"R-CAP-2 default tenant max in flight too big", []string{"serve", "--database-url", "postgres://x", "--default-tenant-max-in-flight", "1000001"}, nil, exitBadArgs, "1-1000000"},
		{"R-CAP-2 default tenant max in flight from env", []string{"serve", "--database-url", "postgres://x"}, map[string]string{"WEIR_DEFAULT_TENANT_MAX_IN_FLIGHT": "many"}, exitBadArgs, "--default-tenant-max-in-flight"},
		{"NATS replicas zero", []string{"serve", "--database-url", "postgres://x", "--nats-replicas", "0"}, nil, exitBadArgs, "--nats-replicas"},
		{"NATS replicas above JetStream's five", []string{"serve", "--database-url", "postgres://x", "--nats-replicas", "7"}, nil, exitBadArgs, "1-5"},
		{"NATS replicas from env", []string{"serve", "--database-url", "postgres://x"}, map[string]string{"WEIR_NATS_REPLICAS": "three"}, exitBadArgs, "--nats-replicas"},
		{"R-SEC-2 NATS port as tenant loopback port", []string{"serve", "--database-url", "postgres://x", "--nats-url", "nats://10.0.0.2:4333", "--tenant-loopback-ports", "8000,4333"}, nil, exitBadArgs, "4333 is a NATS port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, env(tc.env), &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("run = %d, stderr %q; want %d and %q", code, errb.String(), tc.code, tc.stderr)
			}
			if strings.Contains(errb.String(), "short") && tc.name == "bad master key" {
				t.Errorf("stderr quotes the key: %q", errb.String())
			}
		})
	}
}

// The log is JSON unless --dev (text) or --log-format says otherwise, and
// WEIR_LOG_FORMAT and WEIR_LOG_LEVEL are the flags' defaults, for every
// command.
func TestLogFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd         string
		args        []string
		env         map[string]string
		format      string
		debug, info bool
	}{
		{cmd: "serve", format: "json", info: true},
		{cmd: "serve", args: []string{"--dev"}, format: "text", info: true},
		{cmd: "serve", args: []string{"--dev", "--log-format", "json"}, format: "json", info: true},
		{cmd: "migrate", env: map[string]string{"WEIR_LOG_FORMAT": "text", "WEIR_LOG_LEVEL": "debug"}, format: "text", debug: true, info: true},
		{cmd: "bootstrap-admin", args: []string{"--log-level", "warn"}, env: map[string]string{"WEIR_LOG_LEVEL": "debug"}, format: "json"},
		{cmd: "nats-config", args: []string{"--dev", "--log-level", "DEBUG"}, format: "text", debug: true, info: true},
	} {
		t.Run(tc.cmd+strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			tc.env = maps.Clone(tc.env)
			if tc.env == nil {
				tc.env = map[string]string{}
			}
			tc.env["DATABASE_URL"] = "postgres://x"
			var errb bytes.Buffer
			o := optionsFromEnv(env(tc.env))
			fs, _ := o.flagSet(tc.cmd, env(tc.env), &errb)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if code := o.finish(tc.cmd, fs, env(tc.env), &errb); code != exitOK {
				t.Fatalf("finish = %d: %s", code, errb.String())
			}
			if o.log.Format != tc.format {
				t.Errorf("format = %q, want %q", o.log.Format, tc.format)
			}
			log, ctx := o.log.Logger(io.Discard), context.Background()
			if log.Enabled(ctx, slog.LevelDebug) != tc.debug || log.Enabled(ctx, slog.LevelInfo) != tc.info {
				t.Errorf("debug, info enabled = %v, %v; want %v, %v", log.Enabled(ctx, slog.LevelDebug), log.Enabled(ctx, slog.LevelInfo), tc.debug, tc.info)
			}
		})
	}
}

func TestMigrateAndBootstrap(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	getenv := env(map[string]string{"DATABASE_URL": dsn})
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"migrate"}, getenv, &out, &errb); code != exitOK {
		t.Fatalf("migrate = %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run(ctx, []string{"bootstrap-admin", "--name", "root"}, getenv, &out, &errb); code != exitOK {
		t.Fatalf("bootstrap-admin = %d: %s", code, errb.String())
	}
	token := strings.TrimSpace(out.String())
	if !strings.HasPrefix(token, auth.TokenPrefix) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("stdout = %q, want the token alone on one line", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(ctx, []string{"bootstrap-admin", "--name", "root"}, getenv, &out, &errb); code != exitFail || out.Len() != 0 || !strings.Contains(errb.String(), "cluster admin exists") {
		t.Errorf("second bootstrap = %d, stdout %q, stderr %q; want a refusal", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(ctx, []string{"bootstrap-admin", "--name", "root", "--force"}, getenv, &out, &errb); code != exitOK || strings.TrimSpace(out.String()) == token {
		t.Errorf("forced bootstrap = %d, %q", code, out.String())
	}
	if strings.Contains(errb.String(), token) {
		t.Error("a token reached stderr")
	}
}

// config-public-key prints the public key of WEIR_CONFIG_SIGNING_KEY (or,
// with --dev, of the key kept under --var-dir, the same on every run), as
// the edges take it.
func TestConfigPublicKey(t *testing.T) {
	t.Parallel()
	seed := bytes.Repeat([]byte{3}, ed25519.SeedSize)
	want := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	var out, errb bytes.Buffer
	getenv := env(map[string]string{"WEIR_CONFIG_SIGNING_KEY": base64.StdEncoding.EncodeToString(seed)})
	if code := run(context.Background(), []string{"config-public-key"}, getenv, &out, &errb); code != exitOK || strings.TrimSpace(out.String()) != want {
		t.Fatalf("config-public-key = %d, %q (%s); want %q", code, out.String(), errb.String(), want)
	}
	dir := t.TempDir()
	var first string
	for i := range 2 {
		out.Reset()
		if code := run(context.Background(), []string{"config-public-key", "--dev", "--var-dir", dir}, env(nil), &out, &errb); code != exitOK {
			t.Fatalf("config-public-key --dev = %d: %s", code, errb.String())
		}
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out.String()))
		if err != nil || len(k) != ed25519.PublicKeySize {
			t.Fatalf("printed %q: %v", out.String(), err)
		}
		if i == 0 {
			first = out.String()
		} else if out.String() != first {
			t.Errorf("dev key changed between runs: %q, %q", first, out.String())
		}
	}
}
