package server

import (
	"path/filepath"

	"weir.dev/controlplane/internal/natsauth"
	"weir.dev/routing/rules"
)

// NatsAuth is how the control plane authenticates to NATS and secures the
// connection (DESIGN.md §4); its rules (rules.NATSAuth.Check) are the
// edge's, with --dev allowing a plain connection.
type NatsAuth = rules.NATSAuth

// NatsConfig returns the nats-server authorization block (JSON, which
// nats-server's configuration format takes) of the control plane's user
// and of cfg.NatsEdges' users with their permissions, with the passwords
// kept under VarDir/nats-auth (created when missing), for a NATS server
// run apart from the control plane.
func NatsConfig(cfg Config) ([]byte, error) {
	users, err := natsauth.Ensure(filepath.Join(cfg.VarDir, "nats-auth"), cfg.NatsEdges)
	if err != nil {
		return nil, err
	}
	return users.ServerConfig()
}
