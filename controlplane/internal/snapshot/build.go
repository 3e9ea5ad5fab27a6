package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/recordrow"
	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// BuildTenant builds one tenant's snapshot from its rows (see the package
// documentation for the mapping rules).
//
// Secrets that the snapshot's records name are opened with open (master key)
// and sealed for edges under edgeKey (AES-256-GCM, 32 bytes) with nonces read
// from rand, in the order of their names; nothing else is read from rand.
// BuildTenant clears each plaintext open returns once it is sealed.
//
// BuildTenant never changes its arguments and the snapshot shares no memory
// with them. On any problem it returns a nil snapshot and an error that lists
// every problem found: problems with rows wrap ErrInvalidRows, problems with
// secrets wrap ErrSecret.
func BuildTenant(in TenantRows, open OpenFunc, edgeKey []byte, rand io.Reader) (*configv1.TenantSnapshot, error) {
	b := &builder{}
	if !in.Tenant.ID.Valid {
		b.fail("tenant: id is NULL")
	}
	if in.Now.IsZero() {
		b.fail("Now is not set")
	}
	owner := in.Tenant.ID
	out := &configv1.TenantSnapshot{
		Version: in.Version,
		Tenant: &configv1.Tenant{
			Id:       owner.String(),
			Name:     in.Tenant.Name,
			Disabled: in.Tenant.Disabled,
			Limits:   callerLimits(in.Tenant.RPM, in.Tenant.MaxInFlight),
		},
		DataRules:   b.dataRules(in.DataRules, owner),
		ApiKeys:     b.apiKeys(in.APIKeys, owner),
		GeneratedAt: timestamppb.New(in.Now),
	}
	out.Records = b.records(owner, recordRows{
		records:      in.Records,
		models:       in.Models,
		members:      in.Members,
		recordPrices: in.RecordPrices,
		memberPrices: in.MemberPrices,
	})
	out.Budgets = b.budgets(in.Budgets, owner, in.Now)
	out.Secrets = b.secrets(in.Secrets, owner, referencedSecrets(out.Records), open, edgeKey, rand)
	if err := b.err(); err != nil {
		return nil, fmt.Errorf("snapshot: tenant %q (%s): %w", in.Tenant.Name, owner.String(), err)
	}
	return out, nil
}

// BuildCluster builds the cluster snapshot: the managed records, each with
// the ids of the tenants it is shared with, the cluster secrets they name,
// resealed for edges as BuildTenant does, and the tenant loopback ports
// (always set: an empty TenantLoopback when in.TenantLoopback is nil, so
// that edges allow no port), and the default tenant max_in_flight (always
// set: DefaultTenantMaxInFlight when in.DefaultTenantMaxInFlight is not
// positive). A managed record shared with no
// tenant is still sent (with no tenant ids): no edge routes to it, and
// sharing it later changes only the list.
//
// Like BuildTenant it is pure, never changes its arguments, and on any
// problem returns a nil snapshot and an error listing every problem.
func BuildCluster(in ClusterRows, open OpenFunc, edgeKey []byte, rand io.Reader) (*configv1.ClusterSnapshot, error) {
	b := &builder{}
	if in.Now.IsZero() {
		b.fail("Now is not set")
	}
	var cluster pgtype.UUID // NULL: owned by the cluster
	records := b.records(cluster, recordRows{
		records:      in.Records,
		models:       in.Models,
		members:      in.Members,
		recordPrices: in.RecordPrices,
		memberPrices: in.MemberPrices,
	})
	out := &configv1.ClusterSnapshot{
		Version:        in.Version,
		GeneratedAt:    timestamppb.New(in.Now),
		TenantLoopback: &configv1.TenantLoopback{},

		DefaultTenantMaxInFlight: DefaultTenantMaxInFlight,
	}
	if in.DefaultTenantMaxInFlight > 0 {
		out.DefaultTenantMaxInFlight = in.DefaultTenantMaxInFlight
	}
	if in.TenantLoopback != nil {
		out.TenantLoopback = proto.CloneOf(in.TenantLoopback)
	}

	shares := slices.Clone(in.Shares)
	slices.SortFunc(shares, func(a, b sqlc.ListRecordSharesRow) int {
		return cmp.Or(cmp.Compare(a.TenantName, b.TenantName), cmp.Compare(a.TenantID.String(), b.TenantID.String()))
	})
	tenants := map[string][]string{} // record id -> tenant ids
	known := map[string]bool{}
	for _, r := range records {
		known[r.GetId()] = true
	}
	for _, s := range shares {
		switch {
		case !s.RecordID.Valid || !s.TenantID.Valid:
			b.fail("share of record %q with tenant %q: NULL id", s.RecordName, s.TenantName)
		case !known[s.RecordID.String()]:
			b.fail("share of record %q with tenant %q: the record is not among the managed records", s.RecordName, s.TenantName)
		case slices.Contains(tenants[s.RecordID.String()], s.TenantID.String()):
			b.fail("share of record %q with tenant %q: listed twice", s.RecordName, s.TenantName)
		default:
			tenants[s.RecordID.String()] = append(tenants[s.RecordID.String()], s.TenantID.String())
		}
	}
	for _, r := range records {
		out.ManagedRecords = append(out.ManagedRecords, &configv1.ManagedRecord{
			Record:    r,
			TenantIds: tenants[r.GetId()],
		})
	}
	out.Secrets = b.secrets(in.Secrets, cluster, referencedSecrets(records), open, edgeKey, rand)
	if err := b.err(); err != nil {
		return nil, fmt.Errorf("snapshot: cluster: %w", err)
	}
	return out, nil
}

// builder collects the problems of one build, so that an error lists them
// all rather than the first.
type builder struct {
	errs []error
}

// fail records a problem with the rows.
func (b *builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf(format+": %w", append(args, ErrInvalidRows)...))
}

// failErr records a problem that already wraps its sentinel.
func (b *builder) failErr(err error) {
	b.errs = append(b.errs, err)
}

// err joins every problem recorded, or returns nil.
func (b *builder) err() error {
	return errors.Join(b.errs...)
}

// sameOwner reports whether a row's tenant_id is owner: the same tenant, or
// both NULL (the cluster).
func sameOwner(tenantID, owner pgtype.UUID) bool {
	return tenantID.Valid == owner.Valid && (!owner.Valid || tenantID.Bytes == owner.Bytes)
}

// scopeOf is owner_scope(owner): the tenant id, or the nil uuid for the
// cluster.
func scopeOf(owner pgtype.UUID) pgtype.UUID {
	if owner.Valid {
		return owner
	}
	return pgtype.UUID{Valid: true}
}

// ownerName names an owner in problems.
func ownerName(owner pgtype.UUID) string {
	if owner.Valid {
		return "tenant " + owner.String()
	}
	return "the cluster"
}

// dataRules maps the tenant's data rules; nil rows mean none.
func (b *builder) dataRules(d *sqlc.DataRule, owner pgtype.UUID) *configv1.DataRules {
	if d == nil {
		return nil
	}
	if !sameOwner(d.TenantID, owner) {
		b.fail("data rules: belong to %s", ownerName(d.TenantID))
		return nil
	}
	tags, err := recordrow.StringMap(d.RequiredTags)
	if err != nil {
		b.fail("data rules: required_tags: %v", err)
	}
	return &configv1.DataRules{
		AllowedRegions: cloneStrings(d.AllowedRegions),
		NoRetainedData: d.NoRetainedData,
		RequiredTags:   tags,
	}
}

// apiKeys maps the tenant's keys, ordered by name. Every active key is kept;
// a revoked key only when no other key has its name (the latest created
// revoked key of a name wins), since the edge refuses two keys of one name.
func (b *builder) apiKeys(in []sqlc.APIKey, owner pgtype.UUID) []*configv1.ApiKey {
	keys := slices.Clone(in)
	slices.SortFunc(keys, func(a, b sqlc.APIKey) int {
		return cmp.Or(
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(micros(a.CreatedAt), micros(b.CreatedAt)),
			cmp.Compare(a.ID.String(), b.ID.String()),
		)
	})
	chosen := map[string]int{} // name -> index into keys
	for i, k := range keys {
		if !sameOwner(k.TenantID, owner) {
			b.fail("key %q: belongs to %s", k.Name, ownerName(k.TenantID))
			continue
		}
		j, seen := chosen[k.Name]
		switch {
		case !seen:
			chosen[k.Name] = i
		case !k.RevokedAt.Valid && !keys[j].RevokedAt.Valid:
			b.fail("key %q: two active keys have the name", k.Name)
		case !k.RevokedAt.Valid || keys[j].RevokedAt.Valid:
			// An active key wins over revoked ones; among revoked keys
			// the later created one (sorted last) wins.
			chosen[k.Name] = i
		}
	}
	var out []*configv1.ApiKey
	for i, k := range keys {
		if j, ok := chosen[k.Name]; !ok || j != i {
			continue
		}
		out = append(out, &configv1.ApiKey{
			Id:             k.ID.String(),
			Name:           k.Name,
			Sha256:         slices.Clone(k.SHA256),
			AllowedModels:  cloneStrings(k.AllowedModels),
			AllowedRecords: cloneStrings(k.AllowedRecords),
			Regions:        cloneStrings(k.Regions),
			Revoked:        k.RevokedAt.Valid,
			Limits:         callerLimits(k.RPM, k.MaxInFlight),
		})
	}
	return out
}

// budgets maps the tenant's budgets, ordered by name, rolling a day or month
// period that has ended at now over to the current one (nothing spent yet).
func (b *builder) budgets(in []sqlc.Budget, owner pgtype.UUID, now time.Time) []*configv1.Budget {
	rows := slices.Clone(in)
	slices.SortFunc(rows, func(a, b sqlc.Budget) int { return cmp.Compare(a.Name, b.Name) })
	var out []*configv1.Budget
	for _, r := range rows {
		if !sameOwner(r.TenantID, owner) {
			b.fail("budget %q: belongs to %s", r.Name, ownerName(r.TenantID))
			continue
		}
		period, ok := budgetPeriod(r.Period)
		if !ok {
			b.fail("budget %q: unknown period %q", r.Name, r.Period)
			continue
		}
		bg := &configv1.Budget{
			Id:         r.ID.String(),
			Name:       r.Name,
			LimitNanos: r.LimitNanos,
			Period:     period,
			KeyId:      r.KeyID.String(),
			SpentNanos: r.SpentNanos,
		}
		if r.PeriodStart.Valid {
			if r.PeriodStart.InfinityModifier != pgtype.Finite {
				b.fail("budget %q: period_start is not a finite time", r.Name)
				continue
			}
			start, spent := currentPeriod(period, r.PeriodStart.Time, r.SpentNanos, now)
			bg.PeriodStart, bg.SpentNanos = timestamppb.New(start), spent
		}
		out = append(out, bg)
	}
	return out
}

// budgetPeriod maps budgets.period.
func budgetPeriod(s string) (configv1.BudgetPeriod, bool) {
	switch s {
	case "day":
		return configv1.BudgetPeriod_BUDGET_PERIOD_DAY, true
	case "month":
		return configv1.BudgetPeriod_BUDGET_PERIOD_MONTH, true
	case "total":
		return configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL, true
	}
	return configv1.BudgetPeriod_BUDGET_PERIOD_UNSPECIFIED, false
}

// currentPeriod returns the start of the budget period current at now and
// what was spent in it. Day and month periods are UTC calendar periods: when
// the stored period started before the UTC day (month) now is in, that
// period is over, and the current one started at the beginning of now's day
// (month) with nothing spent. A total budget, or a stored period that is
// still current (or starts after now), is returned as stored.
func currentPeriod(p configv1.BudgetPeriod, start time.Time, spent int64, now time.Time) (time.Time, int64) {
	n := now.UTC()
	var begin time.Time
	switch p {
	case configv1.BudgetPeriod_BUDGET_PERIOD_DAY:
		begin = time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC)
	case configv1.BudgetPeriod_BUDGET_PERIOD_MONTH:
		begin = time.Date(n.Year(), n.Month(), 1, 0, 0, 0, 0, time.UTC)
	default:
		return start, spent
	}
	if start.Before(begin) {
		return begin, 0
	}
	return start, spent
}

// secrets reseals, in name order, the owner's secrets that names lists, and
// drops the others.
func (b *builder) secrets(in []sqlc.Secret, owner pgtype.UUID, names map[string]bool, open OpenFunc, edgeKey []byte, rand io.Reader) []*configv1.Secret {
	rows := slices.Clone(in)
	slices.SortFunc(rows, func(a, b sqlc.Secret) int { return cmp.Compare(a.Name, b.Name) })
	seen := map[string]bool{}
	var wanted []sqlc.Secret
	for _, r := range rows {
		if !sameOwner(r.TenantID, owner) {
			b.fail("secret %q: belongs to %s", r.Name, ownerName(r.TenantID))
			continue
		}
		if seen[r.Name] {
			b.fail("secret %q: listed twice", r.Name)
			continue
		}
		seen[r.Name] = true
		if names[r.Name] {
			wanted = append(wanted, r)
		}
	}
	s, err := newSealer(edgeKey, rand)
	if err != nil {
		b.failErr(err)
		return nil
	}
	if len(wanted) > 0 && open == nil {
		b.failErr(fmt.Errorf("no opener for the master key: %w", ErrSecret))
		return nil
	}
	var out []*configv1.Secret
	for _, r := range wanted {
		plain, err := open(r)
		if err != nil {
			b.failErr(fmt.Errorf("secret %q: open under the master key: %w: %w", r.Name, ErrSecret, err))
			continue
		}
		sealed, err := s.seal(plain)
		clear(plain)
		if err != nil {
			b.failErr(fmt.Errorf("secret %q: %w", r.Name, err))
			continue
		}
		var tenantID string
		if owner.Valid {
			tenantID = owner.String()
		}
		out = append(out, &configv1.Secret{
			Name:       r.Name,
			Hosts:      cloneStrings(r.Hosts),
			Ciphertext: sealed,
			TenantId:   tenantID,
		})
	}
	return out
}

// referencedSecrets lists the names of the secrets the records and their
// members name: key secrets, SigV4 access key secrets and OAuth2 client
// secrets.
func referencedSecrets(records []*configv1.ProviderRecord) map[string]bool {
	names := map[string]bool{}
	add := func(n string) {
		if n != "" {
			names[n] = true
		}
	}
	addAuth := func(a *configv1.Auth) {
		add(a.GetAccessKeySecret())
		add(a.GetClientSecretSecret())
	}
	for _, r := range records {
		add(r.GetKeySecret())
		addAuth(r.GetAuth())
		for _, m := range r.GetMembers() {
			add(m.GetKeySecret())
			addAuth(m.GetAuth())
		}
	}
	return names
}

// micros orders timestamps; NULL sorts first.
func micros(t pgtype.Timestamptz) int64 {
	if !t.Valid {
		return -1 << 63
	}
	return t.Time.UnixMicro()
}

// cloneStrings copies a list, returning nil for an empty one.
func cloneStrings(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return slices.Clone(in)
}

// callerLimits are a tenant's or a key's caller limits (R-CAP-2): nil when
// both are 0 (no limit of its own), as a member without limits has none.
func callerLimits(rpm, maxInFlight int64) *configv1.CallerLimits {
	if rpm == 0 && maxInFlight == 0 {
		return nil
	}
	return &configv1.CallerLimits{Rpm: rpm, MaxInFlight: maxInFlight}
}
