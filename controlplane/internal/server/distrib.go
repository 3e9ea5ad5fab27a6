package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/natsauth"
	"weir.dev/controlplane/internal/natsembed"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/store"
	"weir.dev/natsconf"
)

// distribution is the running distribution layer: the NATS connection, the
// distributor's loops and, in dev mode, the embedded NATS server.
type distribution struct {
	commander *distrib.Commander
	stop      func()
}

// startDistribution connects to cfg.NatsURL — or, in dev mode without one,
// to an embedded NATS server listening on cfg.NatsListen with its state
// under <VarDir>/nats — and runs the distributor until stop is called (or
// ctx ends). Without a URL outside dev mode it runs nothing and says so:
// the admin API works, but changes wait in the outbox (the doctor reports
// outbox_stalled) and no usage is ingested. tracer, when not nil, traces
// usage ingest.
func startDistribution(ctx context.Context, cfg Config, st *store.Store, box *secretbox.Box, edgeKey, signingKey []byte, tracer trace.Tracer, log *slog.Logger) (*distribution, error) {
	url := cfg.NatsURL
	auth := natsconf.AuthOptions(cfg.NatsAuth)
	var embedded *natsembed.Server
	if url == "" {
		if !cfg.Dev {
			log.Warn("NATS_URL is not set: config changes are not pushed to edges and usage is not ingested")
			return &distribution{stop: func() {}}, nil
		}
		var err error
		if embedded, auth, err = startEmbeddedNATS(cfg, log); err != nil {
			return nil, err
		}
		url = embedded.ClientURL()
	}
	nc, err := connectNATS(url, auth, log)
	if err != nil {
		if embedded != nil {
			embedded.Close()
		}
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	dcfg := distrib.DefaultConfig()
	dcfg.EdgeKey, dcfg.Open, dcfg.Log, dcfg.SigningKey = edgeKey, distrib.OpenWith(box), log, signingKey
	dcfg.TenantLoopback = cfg.TenantLoopback()
	dcfg.Replicas = cfg.NatsReplicas
	dcfg.ReplicaName = replicaName()
	dcfg.DefaultTenantMaxInFlight = cfg.DefaultTenantMaxInFlight
	dcfg.Tracer = tracer
	d, err := distrib.New(st, nc, dcfg)
	if err != nil {
		nc.Close()
		if embedded != nil {
			embedded.Close()
		}
		return nil, err
	}
	log.Info("config snapshots and commands are signed; edges verify them with this key",
		"config_public_key", d.Signer().PublicKeyText())
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.Run(runCtx); err != nil {
			log.Error("distribution stopped", "err", err)
		}
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			nc.Close()
			if embedded != nil {
				embedded.Close()
			}
		})
	}
	return &distribution{commander: d.Commander(), stop: stop}, nil
}

// replicaName names this control plane in logs: host name and process id.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "controlplane"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// startEmbeddedNATS starts dev mode's NATS server on cfg.NatsListen (a
// free port instead when cfg.NatsListenFallback allows and the port is
// taken), with its state under <VarDir>/nats and the users and
// permissions of a production NATS, and returns it with the options the
// control plane connects to it with.
func startEmbeddedNATS(cfg Config, log *slog.Logger) (*natsembed.Server, []nats.Option, error) {
	host, portText, err := net.SplitHostPort(cfg.NatsListen)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded NATS address %q: %w", cfg.NatsListen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded NATS port %q: %w", portText, err)
	}
	// The embedded server has the users and permissions of a
	// production NATS (package natsauth), passwords under var/.
	credDir := filepath.Join(cfg.VarDir, "nats-auth")
	users, err := natsauth.Ensure(credDir, cfg.NatsEdges)
	if err != nil {
		return nil, nil, err
	}
	embedded, err := natsembed.Start(natsembed.Options{
		Host: host, Port: port, FreePortIfTaken: cfg.NatsListenFallback, StoreDir: filepath.Join(cfg.VarDir, "nats"), Log: log,
		Users: users.ServerUsers(),
	})
	if err != nil {
		return nil, nil, err
	}
	log.Info("embedded NATS users: an edge connects as --nats-user <edge id> with the password in "+natsauth.EdgePasswordFile(credDir, "<edge id>"),
		"edges", strings.Join(cfg.NatsEdges, ","))
	return embedded, []nats.Option{nats.UserInfo(natsauth.ControlPlaneUser, users.ControlPlane)}, nil
}

// connectNATS connects to url with the options auth, reconnecting for
// ever, and logs disconnections, reconnections and asynchronous errors.
func connectNATS(url string, auth []nats.Option, log *slog.Logger) (*nats.Conn, error) {
	return nats.Connect(url, append(auth,
		nats.Name("weir-controlplane"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS error", "subject", subject, "err", err)
		}),
	)...)
}
