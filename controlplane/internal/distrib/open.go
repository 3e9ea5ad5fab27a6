package distrib

import (
	"fmt"

	"weir.dev/controlplane/internal/secretbox"
	"weir.dev/controlplane/internal/snapshot"
	"weir.dev/db/sqlc"
)

// OpenWith returns the snapshot.OpenFunc of box: it opens a secret row
// sealed under the master key of the current key version. Its errors name
// the secret, never its value.
func OpenWith(box *secretbox.Box) snapshot.OpenFunc {
	return func(row sqlc.Secret) ([]byte, error) {
		if row.KeyVersion != secretbox.KeyVersion {
			return nil, fmt.Errorf("secret %q is sealed under master key version %d; this control plane has version %d",
				row.Name, row.KeyVersion, secretbox.KeyVersion)
		}
		p, err := box.Open(row.Ciphertext, row.Nonce)
		if err != nil {
			return nil, fmt.Errorf("secret %q: %w", row.Name, err)
		}
		return p, nil
	}
}
