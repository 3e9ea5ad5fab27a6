package secretbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"weir.dev/db/sqlc"
)

// RowAD is the additional data a secret row of SealVersion is sealed with:
// AdditionalData of its tenant, name and hosts.
func RowAD(row sqlc.Secret) []byte { return AdditionalData(row.TenantID, row.Name, row.Hosts) }

// ResealAll re-seals, in one transaction, every secret row (tenant-owned and
// managed) of a seal version older than SealVersion: each is opened the way
// its version was sealed (version 0: no additional data) and sealed again
// with RowAD, keeping its value and updated_at. It returns how many rows it
// re-sealed; running it again re-seals nothing, and concurrent runs (two
// control planes starting) wait for each other on the rows' locks. Any row
// that does not open (another master key) fails the whole step, naming the
// secret, never its value, and changes nothing.
func ResealAll(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, box *Box) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		n = 0
		q := sqlc.New(tx)
		rows, err := q.LockSecretsBelowSealVersion(ctx, SealVersion)
		if err != nil {
			return fmt.Errorf("secretbox: list secrets to re-seal: %w", err)
		}
		for _, r := range rows {
			if r.KeyVersion != KeyVersion {
				return fmt.Errorf("secretbox: secret %q (%s) is sealed under master key version %d; this control plane has version %d",
					r.Name, owner(r), r.KeyVersion, KeyVersion)
			}
			plain, err := box.Open(r.Ciphertext, r.Nonce, nil)
			if err != nil {
				return fmt.Errorf("secretbox: re-seal secret %q (%s): %w", r.Name, owner(r), err)
			}
			ct, nonce, err := box.Seal(plain, RowAD(r))
			clear(plain)
			if err != nil {
				return fmt.Errorf("secretbox: re-seal secret %q (%s): %w", r.Name, owner(r), err)
			}
			if _, err := q.ResealSecret(ctx, sqlc.ResealSecretParams{
				ID: r.ID, Ciphertext: ct, Nonce: nonce, KeyVersion: KeyVersion, SealVersion: SealVersion,
			}); err != nil {
				return fmt.Errorf("secretbox: re-seal secret %q (%s): %w", r.Name, owner(r), err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func owner(r sqlc.Secret) string {
	if !r.TenantID.Valid {
		return "managed"
	}
	return "tenant " + r.TenantID.String()
}
