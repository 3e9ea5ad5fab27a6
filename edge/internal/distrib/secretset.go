package distrib

import (
	"errors"
	"fmt"

	"weir.dev/edge/internal/secrets"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// openSecrets decrypts a snapshot's secrets with the edge key. owner is the
// tenant that owns them ("" for the cluster's); a secret that names another
// owner is refused, so one tenant's snapshot can never place a secret where
// another tenant's records would find it. Every problem is reported.
func openSecrets(edgeKey []byte, owner string, in []*configv1.Secret) ([]secrets.Secret, error) {
	out := make([]secrets.Secret, 0, len(in))
	var errs []error
	for i, s := range in {
		if s.GetTenantId() != "" && s.GetTenantId() != owner {
			errs = append(errs, fmt.Errorf("secret %d %q: tenant_id %q is not the snapshot's owner %q", i, s.GetName(), s.GetTenantId(), owner))
			continue
		}
		v, err := secrets.Open(edgeKey, s.GetCiphertext())
		if err != nil {
			errs = append(errs, fmt.Errorf("secret %d %q: %w", i, s.GetName(), err))
			continue
		}
		out = append(out, secrets.Secret{Name: s.GetName(), TenantID: owner, Hosts: append([]string(nil), s.GetHosts()...), Value: v})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Check the list on its own (names, hosts, duplicates), so a bad secret
	// refuses the snapshot that carries it rather than every later store.
	if _, err := secrets.NewStore(out); err != nil {
		return nil, err
	}
	return out, nil
}

// buildStore builds one store over the cluster's secrets and every tenant's.
// Lists passed openSecrets' checks and have distinct owners, so this only
// fails on a bug; the caller then keeps the store it has.
func buildStore(cluster []secrets.Secret, tenants map[string]*tenantState) (*secrets.Store, error) {
	n := len(cluster)
	for _, ts := range tenants {
		n += len(ts.secrets)
	}
	all := make([]secrets.Secret, 0, n)
	all = append(all, cluster...)
	for _, ts := range tenants {
		all = append(all, ts.secrets...)
	}
	st, err := secrets.NewStore(all)
	if err != nil {
		return nil, fmt.Errorf("distrib: secret store: %w", err)
	}
	return st, nil
}
