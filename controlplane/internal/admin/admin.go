// Package admin implements the admin API's Connect services except the
// provider, pool and price services (package provider): TenantService,
// ApiKeyService, AdminService, SecretService, BudgetService, UsageService,
// CallService, EdgeService, DoctorService and AuditService. One file per
// service.
//
// Every handler authorizes first (package auth: a tenant the caller holds no
// role on is NotFound), then validates every field and reports all problems
// at once (apierr.Problems → InvalidArgument with a ValidationError detail),
// then changes state in one store transaction that also writes the audit row
// and, when the tenant's config changed, one outbox row. Store errors become
// Connect codes only here (apierr.FromStore). Secret values are encrypted
// before they reach the store and are never returned, logged or audited.
package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// Deps are the handlers' dependencies.
type Deps struct {
	// Store is the database. Required.
	Store *store.Store
	// Box encrypts secret values under the master key. Required.
	Box *secretbox.Box
	// Log receives operational messages; nil discards them. Handlers never
	// log request bodies.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of keys and tokens; nil means crypto/rand.
	Rand io.Reader
	// Revoker sends key revocations to the edges at once; nil sends none
	// (edges still learn of a revocation from the tenant's next snapshot).
	Revoker Revoker
	// DefaultTenantMaxInFlight is the cluster default of a tenant's
	// max_in_flight (ROUTING.md R-CAP-2, controlplane serve
	// --default-tenant-max-in-flight): the effective limit of tenants that
	// set none, and the most a tenant admin may set. 0 means
	// DefaultTenantMaxInFlight (512).
	DefaultTenantMaxInFlight int64
}

// Revoker delivers the revocation of an API key to every edge at once, as a
// weir.telemetry.v1.Command (revoke_key) on weir.cmd.revoke. The
// distribution layer implements it. RevokeKey returns once the command is
// published and must not keep cmd.
type Revoker interface {
	RevokeKey(ctx context.Context, cmd *telemetryv1.Command) error
}

func (d Deps) withDefaults() Deps {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Rand == nil {
		d.Rand = rand.Reader
	}
	return d
}

// ServiceNames are the fully qualified names of the services Register
// mounts.
func ServiceNames() []string {
	return []string{
		adminv1connect.TenantServiceName,
		adminv1connect.ApiKeyServiceName,
		adminv1connect.AdminServiceName,
		adminv1connect.SecretServiceName,
		adminv1connect.BudgetServiceName,
		adminv1connect.UsageServiceName,
		adminv1connect.CallServiceName,
		adminv1connect.EdgeServiceName,
		adminv1connect.DoctorServiceName,
		adminv1connect.AuditServiceName,
	}
}

// Register mounts every service of this package on mux with opts (which
// must include the auth interceptor: handlers refuse requests without a
// Principal).
func Register(mux *http.ServeMux, d Deps, opts ...connect.HandlerOption) {
	d = d.withDefaults()
	b := base{tx: d.Store, log: d.Log, now: d.Now, rand: d.Rand, defaultInFlight: d.DefaultTenantMaxInFlight}
	mux.Handle(adminv1connect.NewTenantServiceHandler(&TenantService{base: b, q: d.Store.Q}, opts...))
	mux.Handle(adminv1connect.NewApiKeyServiceHandler(&ApiKeyService{base: b, q: d.Store.Q, revoker: d.Revoker}, opts...))
	mux.Handle(adminv1connect.NewAdminServiceHandler(&AdminService{base: b, q: d.Store.Q}, opts...))
	mux.Handle(adminv1connect.NewSecretServiceHandler(&SecretService{base: b, q: d.Store.Q, box: d.Box}, opts...))
	mux.Handle(adminv1connect.NewBudgetServiceHandler(&BudgetService{base: b, q: d.Store.Q}, opts...))
	mux.Handle(adminv1connect.NewUsageServiceHandler(&UsageService{base: b, q: d.Store.Q}, opts...))
	mux.Handle(adminv1connect.NewCallServiceHandler(&CallService{base: b, q: d.Store.Q}, opts...))
	mux.Handle(adminv1connect.NewEdgeServiceHandler(&EdgeService{base: b, q: d.Store.Q}, opts...))
	mux.Handle(adminv1connect.NewDoctorServiceHandler(&DoctorService{base: b, q: d.Store.Q}, opts...))
	mux.Handle(adminv1connect.NewAuditServiceHandler(&AuditService{base: b, q: d.Store.Q}, opts...))
}

// txRunner runs a change in one transaction (*store.Store).
type txRunner interface {
	Tx(ctx context.Context, actor store.Actor, fn func(*store.Tx) error) error
}

// base is what every service shares.
type base struct {
	tx   txRunner
	log  *slog.Logger
	now  func() time.Time
	rand io.Reader
	// defaultInFlight is Deps.DefaultTenantMaxInFlight.
	defaultInFlight int64
}

// tenantGetter finds tenants by name.
type tenantGetter interface {
	GetTenantByName(ctx context.Context, name string) (sqlc.Tenant, error)
}

// scope authorizes the caller for tenant (see auth.Require) and resolves it:
// the tenant row, or store.Cluster with a zero row for the cluster scope. A
// tenant that does not exist is NotFound with the same message a caller
// without a role on it gets.
func scope(ctx context.Context, q tenantGetter, tenant string, allowed ...auth.Role) (auth.Principal, sqlc.Tenant, error) {
	p, err := auth.Require(ctx, tenant, allowed...)
	if err != nil {
		return auth.Principal{}, sqlc.Tenant{}, err
	}
	if tenant == "" {
		return p, sqlc.Tenant{ID: store.Cluster}, nil
	}
	t, err := q.GetTenantByName(ctx, tenant)
	if err != nil {
		if store.IsNotFound(err) {
			return auth.Principal{}, sqlc.Tenant{}, auth.TenantNotFound(tenant)
		}
		return auth.Principal{}, sqlc.Tenant{}, apierr.FromStore(err)
	}
	return p, t, nil
}

// NewKey returns a fresh API key — "weir_" and 32 random bytes from rand in
// unpadded base64url — and the SHA-256 of its text, which is what edges
// compare. The key must be shown once and never stored or logged.
func NewKey(rand io.Reader) (key string, sum []byte, err error) {
	var b [32]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", nil, fmt.Errorf("admin: random key: %w", err)
	}
	key = "weir_" + base64.RawURLEncoding.EncodeToString(b[:])
	s := sha256.Sum256([]byte(key))
	return key, s[:], nil
}

// keyPrefix is the part of a key or token kept in plaintext (at most 12
// characters) so that people can tell keys apart; too short to use.
func keyPrefix(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

func ts(t pgtype.Timestamptz) *timestamppb.Timestamp {
	if !t.Valid {
		return nil
	}
	return timestamppb.New(t.Time)
}

func pgts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }
