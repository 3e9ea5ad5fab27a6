package server_test

import (
	"slices"
	"testing"

	"weir.dev/controlplane/internal/server"
)

// R-SEC-2: --tenant-loopback-ports, and what the cluster snapshot says of
// it: the listed ports, none by default, every port under --dev.
func TestTenantLoopbackPortsRSEC2(t *testing.T) {
	t.Parallel()
	ports, err := server.ParsePorts(" 11434,8000,8000 ")
	if err != nil || !slices.Equal(ports, []uint16{8000, 11434}) {
		t.Fatalf("ParsePorts = %v, %v", ports, err)
	}
	for _, bad := range []string{"0", "65536", "8000,x", "-1"} {
		if _, err := server.ParsePorts(bad); err == nil {
			t.Errorf("ParsePorts(%q) accepted", bad)
		}
	}
	if ports, err := server.ParsePorts(""); err != nil || len(ports) != 0 {
		t.Errorf("ParsePorts(\"\") = %v, %v", ports, err)
	}

	cfg := server.DefaultConfig()
	cfg.DatabaseURL = "postgres://x"
	if tl := cfg.TenantLoopback(); tl.GetAllPorts() || len(tl.GetPorts()) != 0 {
		t.Errorf("default: %v, want no port", tl)
	}
	cfg.TenantLoopbackPorts = []uint16{8000, 11434}
	if tl := cfg.TenantLoopback(); tl.GetAllPorts() || !slices.Equal(tl.GetPorts(), []uint32{8000, 11434}) {
		t.Errorf("8000,11434: %v", tl)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	cfg.Dev = true
	if tl := cfg.TenantLoopback(); !tl.GetAllPorts() {
		t.Errorf("--dev: %v, want every port", tl)
	}
	// The embedded NATS server's port is never a tenant loopback port.
	cfg.TenantLoopbackPorts = []uint16{4222}
	if err := cfg.Validate(); err == nil {
		t.Error("Validate accepted the embedded NATS port as a tenant loopback port")
	}
}
