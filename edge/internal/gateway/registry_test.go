package gateway

import (
	"crypto/sha256"
	"testing"

	"weir.dev/routing"
)

// Ready means a config was installed, even one without any tenant (an
// edge of a cluster that has no tenant yet); a registry nothing was
// installed into is not ready. Revoking a key installs nothing.
func TestRegistryReady(t *testing.T) {
	t.Parallel()
	table := routing.NewTable("t1", "acme", routing.DataRules{}, nil, nil)
	tests := []struct {
		name    string
		install func(*Registry)
		ready   bool
	}{
		{"nothing installed", func(*Registry) {}, false},
		{"a key revoked only", func(r *Registry) { r.Revoke(sha256.Sum256([]byte("k"))) }, false},
		{"an empty config", func(r *Registry) { r.Set(nil) }, true},
		{"a config with a tenant", func(r *Registry) { r.Set([]*routing.Table{table}) }, true},
		{"one tenant put", func(r *Registry) { r.Put(table) }, true},
		{"an empty config, then a key revoked", func(r *Registry) { r.Set(nil); r.Revoke(sha256.Sum256([]byte("k"))) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewRegistry()
			tc.install(r)
			if got := r.Ready(); got != tc.ready {
				t.Errorf("Ready() = %v, want %v", got, tc.ready)
			}
		})
	}
}
