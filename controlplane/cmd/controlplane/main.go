// Command controlplane runs Weir's control plane: the admin API over
// PostgreSQL.
//
//	controlplane [serve] [--listen ADDR] [--tls-cert FILE --tls-key FILE] [--database-url DSN] [--nats-url URL] [--nats-listen ADDR] [--dev] [--var-dir DIR]
//	controlplane bootstrap-admin [--name NAME] [--force] [--database-url DSN] [--dev]
//	controlplane migrate [--database-url DSN] [--dev]
//	controlplane config-public-key [--dev] [--var-dir DIR]
//	controlplane nats-config [--var-dir DIR] [--nats-edges ID,...]
//
// Environment: WEIR_CP_LISTEN (default 127.0.0.1:7070), WEIR_CP_TLS_CERT and
// WEIR_CP_TLS_KEY (TLS on the admin port), DATABASE_URL,
// NATS_URL (in dev mode, unset starts an embedded NATS server with
// JetStream on WEIR_NATS_LISTEN, default 127.0.0.1:4222 — or, when neither
// it nor --nats-listen is given and 4222 is in use, a free port, which the
// log names — with its state in <var-dir>/nats; outside dev mode, unset
// runs no distribution),
// WEIR_MASTER_KEY (32 bytes, base64 or hex; required unless --dev, which
// keeps one in <var-dir>/master.key), WEIR_EDGE_KEY (likewise edge.key),
// WEIR_CONFIG_SIGNING_KEY (the 32-byte Ed25519 seed that signs config
// snapshots and commands; likewise config-signing.key; config-public-key
// prints the public key edges take as --config-public-key), NATS_CREDS,
// NATS_USER, NATS_PASSWORD, NATS_CA, NATS_CERT, NATS_KEY, NATS_INSECURE
// (the NATS connection; outside --dev an unauthenticated or plain-text one
// is refused unless --nats-insecure), WEIR_NATS_EDGES (the edges the
// embedded NATS server has users for; nats-config prints a nats-server
// authorization block of those users, passwords under <var-dir>/nats-auth),
// OTEL_EXPORTER_OTLP_ENDPOINT and the other standard OTEL_* variables (serve
// traces admin RPCs and usage ingest over OTLP when an endpoint is set; see
// docs/operations.md). WEIR_LOG_FORMAT and WEIR_LOG_LEVEL (--log-format,
// --log-level) set the log on stderr: JSON by default, text with --dev;
// info level by default.
// Exit status: 0 on success, 1 on failure, 2 on bad usage.
package main

import (
	// The IANA zone database is built in, so that a record's day_zone
	// (R-HEAD-6) loads on any machine, with or without tzdata installed.
	_ "time/tzdata"

	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
