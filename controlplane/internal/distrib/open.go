package distrib

import (
	"fmt"

	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/snapshot"
	"weir.dev/db/sqlc"
)

// OpenWith returns the snapshot.OpenFunc of box: it opens a secret row
// sealed under the master key of the current key version and seal version,
// with the row's tenant, name and hosts as additional data, so a ciphertext
// moved to another row does not open. Rows of an older seal version are
// refused: secretbox.ResealAll upgrades them at start. Its errors name the
// secret, never its value.
func OpenWith(box *secretbox.Box) snapshot.OpenFunc {
	return func(row sqlc.Secret) ([]byte, error) {
		if row.KeyVersion != secretbox.KeyVersion {
			return nil, fmt.Errorf("secret %q is sealed under master key version %d; this control plane has version %d",
				row.Name, row.KeyVersion, secretbox.KeyVersion)
		}
		if row.SealVersion != secretbox.SealVersion {
			return nil, fmt.Errorf("secret %q has seal version %d, not %d: run `controlplane migrate` or restart the control plane to re-seal it",
				row.Name, row.SealVersion, secretbox.SealVersion)
		}
		p, err := box.Open(row.Ciphertext, row.Nonce, secretbox.RowAD(row))
		if err != nil {
			return nil, fmt.Errorf("secret %q: %w", row.Name, err)
		}
		return p, nil
	}
}
