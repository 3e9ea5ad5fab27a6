package distrib

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"weir.dev/edge/internal/secrets"
	"weir.dev/natsconf"
	"weir.dev/routing/rules"
)

// Auth is how an edge authenticates to NATS and secures the connection
// (DESIGN.md §4); its rules (rules.NATSAuth.Check) are the control plane's.
// An edge has no dev mode: it checks with allowPlain false.
type Auth = rules.NATSAuth

// Connect dials NATS the way an edge needs it: it returns at once even when
// NATS is down (the edge serves from its disk cache meanwhile), reconnects
// forever, and does not buffer while disconnected, so that publishes fail
// fast and call records take the journal's replay path. auth authenticates
// and secures the connection.
func Connect(url, edgeID string, auth Auth, log *slog.Logger) (*nats.Conn, error) {
	opts := append(natsconf.AuthOptions(auth),
		nats.Name("weir-edge "+edgeID),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected; serving on, records wait in the journal", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS connected", "url", nc.ConnectedUrlRedacted()) }),
		nats.ConnectHandler(func(nc *nats.Conn) { log.Info("NATS connected", "url", nc.ConnectedUrlRedacted()) }),
		// Asynchronous errors (a consumer that went away while NATS
		// restarted, a slow subscriber) go to the edge's log rather than
		// nats.go's default of printing to stderr; the watchers recreate
		// what they need.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS asynchronous error", "subject", subject, "err", err)
		}),
	)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("distrib: connecting to NATS: %w", err)
	}
	return nc, nil
}

// ParseEdgeKey decodes WEIR_EDGE_KEY: 32 bytes as 64 hex digits or as
// base64 (standard or URL alphabet, padded or not). The error never
// contains the key.
func ParseEdgeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*secrets.KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != secrets.KeySize {
				return nil, fmt.Errorf("distrib: the edge key decodes to %d bytes, want %d", len(b), secrets.KeySize)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("distrib: the edge key is neither %d bytes of hex nor base64", secrets.KeySize)
}
