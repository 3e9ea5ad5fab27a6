package auth

import (
	"context"
	"errors"
	"fmt"
	"io"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
)

// ErrClusterAdminExists is returned by Bootstrap when a cluster admin exists
// already and force is false.
var ErrClusterAdminExists = errors.New("a cluster admin exists already (use --force to add another and print its token)")

// Bootstrap creates the first cluster admin — the admin called name, created
// unless it exists — grants it cluster admin and returns a new token for it,
// in one transaction that is audited as the control plane's own change. It
// refuses with ErrClusterAdminExists when any cluster admin exists unless
// force. The token is returned once; only its hash is stored.
func Bootstrap(ctx context.Context, st *store.Store, name string, force bool, rand io.Reader) (string, error) {
	if name == "" {
		return "", errors.New("auth: bootstrap: an admin name is required")
	}
	token, sum, err := NewToken(rand)
	if err != nil {
		return "", err
	}
	err = st.Tx(ctx, store.Actor{Name: "controlplane", Procedure: "bootstrap-admin"}, func(tx *store.Tx) error {
		if err := tx.Q.LockAdminRoles(ctx); err != nil {
			return err
		}
		n, err := tx.Q.CountClusterAdmins(ctx)
		if err != nil {
			return err
		}
		if n > 0 && !force {
			return ErrClusterAdminExists
		}
		a, err := tx.Q.GetAdminByName(ctx, name)
		if store.IsNotFound(err) {
			a, err = tx.Q.CreateAdmin(ctx, sqlc.CreateAdminParams{Name: name})
		}
		if err != nil {
			return err
		}
		if _, err := tx.Q.GrantRole(ctx, sqlc.GrantRoleParams{AdminID: a.ID, Role: string(RoleClusterAdmin)}); err != nil {
			return err
		}
		tok, err := tx.Q.CreateAdminToken(ctx, sqlc.CreateAdminTokenParams{AdminID: a.ID, Label: "bootstrap", SHA256: sum})
		if err != nil {
			return err
		}
		prefix := token[:12]
		if err := tx.Audit(ctx, "create", "admin_tokens", a.Name, map[string]any{"id": store.UUIDString(tok.ID), "prefix": prefix, "description": "bootstrap"}); err != nil {
			return err
		}
		return tx.Audit(ctx, "grant", "admins", a.Name, map[string]any{"id": store.UUIDString(a.ID), "role": string(RoleClusterAdmin)})
	})
	if err != nil {
		return "", fmt.Errorf("auth: bootstrap: %w", err)
	}
	return token, nil
}
