// Package standalone runs an edge from a config file instead of a control
// plane: a protojson weir.config.v1.StandaloneConfig whose secrets are read
// from environment variables or files. The file is reloaded on SIGHUP and
// when it changes; a file that fails to load is refused and the last good
// configuration stays in force.
package standalone

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
	"weir.dev/routing/rules"

	"google.golang.org/protobuf/encoding/protojson"

	"weir.dev/edge/internal/secrets"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
	"weir.dev/routing/compile"
)

// Config is a loaded, compiled standalone configuration.
type Config struct {
	Tables  []*routing.Table
	Secrets *secrets.Store
	// TenantLoopback is which loopback ports tenant-owned records may dial
	// (R-SEC-2): cluster.tenant_loopback of the file, every port when the
	// file does not say (the operator wrote every record of it).
	TenantLoopback rules.TenantLoopback
	// Sum is the SHA-256 of the file it came from.
	Sum [32]byte
}

// Load reads and compiles the file at path. getenv reads environment
// variables for secrets given by env. Every problem found is reported.
func Load(path string, getenv func(string) string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("standalone: %w", err)
	}
	return Parse(raw, getenv, readFile)
}

func readFile(p string) ([]byte, error) { return os.ReadFile(p) }

// Parse compiles a config file's bytes; readFile reads secrets given by file.
func Parse(raw []byte, getenv func(string) string, readFile func(string) ([]byte, error)) (*Config, error) {
	var sc configv1.StandaloneConfig
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(raw, &sc); err != nil {
		return nil, fmt.Errorf("standalone: config is not a valid StandaloneConfig: %w", err)
	}
	var problems []error
	var list []secrets.Secret
	for i, s := range sc.GetSecrets() {
		var v []byte
		switch src := s.GetSource().(type) {
		case *configv1.SecretSource_Env:
			v = []byte(getenv(src.Env))
			if len(v) == 0 {
				problems = append(problems, fmt.Errorf("secret %q: environment variable %s is empty or unset", s.GetName(), src.Env))
			}
		case *configv1.SecretSource_File:
			b, err := readFile(src.File)
			if err != nil {
				problems = append(problems, fmt.Errorf("secret %q: %w", s.GetName(), err))
			}
			v = bytes.TrimRight(b, "\r\n")
		default:
			problems = append(problems, fmt.Errorf("secrets[%d] %q: give env or file", i, s.GetName()))
		}
		list = append(list, secrets.Secret{Name: s.GetName(), TenantID: s.GetTenantId(), Hosts: s.GetHosts(), Value: v})
	}
	store, err := secrets.NewStore(list)
	if err != nil {
		problems = append(problems, err)
	}
	loopback, err := compile.TenantLoopback(sc.GetCluster(), rules.TenantLoopback{AllPorts: true})
	if err != nil {
		problems = append(problems, err)
	}
	var tables []*routing.Table
	for _, t := range sc.GetTenants() {
		tb, err := compile.Compile(t, sc.GetCluster())
		if err != nil {
			problems = append(problems, fmt.Errorf("tenant %q: %w", t.GetTenant().GetName(), err))
			continue
		}
		tables = append(tables, tb)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return &Config{Tables: tables, Secrets: store, TenantLoopback: loopback, Sum: sha256.Sum256(raw)}, nil
}

// Watch calls apply with the config at path now and again on SIGHUP or
// when the file's content changes (checked every poll). A config that fails
// to load is logged and refused; the last good one stays. Watch returns the
// first load's error, or nil when ctx ends.
func Watch(ctx context.Context, path string, poll time.Duration, getenv func(string) string, log *slog.Logger, apply func(*Config)) error {
	cur, err := Load(path, getenv)
	if err != nil {
		return err
	}
	apply(cur)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var lastMod time.Time
	if st, err := os.Stat(path); err == nil {
		lastMod = st.ModTime()
	}
	for {
		forced := false
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			forced = true
		case <-tick.C:
			st, err := os.Stat(path)
			if err != nil || st.ModTime().Equal(lastMod) {
				continue
			}
			lastMod = st.ModTime()
		}
		next, err := Load(path, getenv)
		if err != nil {
			log.Error("config refused; keeping the last good one", "path", path, "err", err)
			continue
		}
		if next.Sum == cur.Sum && !forced {
			continue
		}
		cur = next
		apply(cur)
		log.Info("config loaded", "path", path, "tenants", len(cur.Tables))
	}
}
