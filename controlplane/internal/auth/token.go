package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
)

// TokenPrefix starts every admin token, so that a leaked token is easy to
// recognise (and to scan for).
const TokenPrefix = "weir_adm_"

var (
	errUnauthenticated = errors.New("missing, unknown, expired or revoked admin token")
	errClusterOnly     = errors.New("only cluster admins may do this")
	errRole            = errors.New("your roles on this tenant do not allow this")
)

// NewToken returns a fresh admin token (32 random bytes from rand, as
// "weir_adm_<base64url>") and the SHA-256 to store. The token itself must be
// shown once and never stored or logged.
func NewToken(rand io.Reader) (token string, sum []byte, err error) {
	var b [32]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return "", nil, fmt.Errorf("auth: random token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token), nil
}

// HashToken is the stored form of a token: SHA-256 of its text.
func HashToken(token string) []byte {
	s := sha256.Sum256([]byte(token))
	return s[:]
}

// Queries are the queries authentication needs; *sqlc.Queries has them.
type Queries interface {
	GetAdminTokenByHash(ctx context.Context, sha256 []byte) (sqlc.GetAdminTokenByHashRow, error)
	ListAdminGrants(ctx context.Context, adminID pgtype.UUID) ([]sqlc.ListAdminGrantsRow, error)
	TouchAdminToken(ctx context.Context, id pgtype.UUID) error
}

// Authenticate returns the Principal of a bearer token: the admin (not
// disabled) of an unexpired, unrevoked token, with its grants; it records the
// token's use. An unusable token is a Connect Unauthenticated error; a
// database failure is returned wrapped (the caller reports Unavailable or
// Internal without details).
func Authenticate(ctx context.Context, q Queries, token string) (Principal, error) {
	if token == "" {
		return Principal{}, connect.NewError(connect.CodeUnauthenticated, errUnauthenticated)
	}
	row, err := q.GetAdminTokenByHash(ctx, HashToken(token))
	if err != nil {
		if store.IsNotFound(err) {
			return Principal{}, connect.NewError(connect.CodeUnauthenticated, errUnauthenticated)
		}
		return Principal{}, fmt.Errorf("auth: look up token: %w", err)
	}
	grants, err := q.ListAdminGrants(ctx, row.Admin.ID)
	if err != nil {
		return Principal{}, fmt.Errorf("auth: load grants: %w", err)
	}
	if err := q.TouchAdminToken(ctx, row.AdminToken.ID); err != nil {
		return Principal{}, fmt.Errorf("auth: touch token: %w", err)
	}
	p := Principal{
		AdminID: store.UUIDString(row.Admin.ID),
		Name:    row.Admin.Name,
		TokenID: store.UUIDString(row.AdminToken.ID),
	}
	for _, g := range grants {
		p.Grants = append(p.Grants, Grant{Role: Role(g.Role), TenantID: g.TenantID, Tenant: g.TenantName.String})
	}
	return p, nil
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(h string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

func quote(s string) string { return strconv.Quote(s) }
