package snapshot

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/recordrow"
	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// recordRows are the rows of one owner's provider records.
type recordRows struct {
	records      []sqlc.ProviderRecord
	models       []sqlc.RecordModel
	members      []sqlc.PoolMember
	recordPrices []sqlc.RecordPrice
	memberPrices []sqlc.MemberPrice
}

// records maps the owner's records (owner NULL: the cluster's managed
// records), ordered by name. Every model, price, member and member price row
// must belong to one of the records; a pool record without members is left
// out.
func (b *builder) records(owner pgtype.UUID, in recordRows) []*configv1.ProviderRecord {
	recs := slices.Clone(in.records)
	slices.SortFunc(recs, func(a, b sqlc.ProviderRecord) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID.String(), b.ID.String()))
	})
	byID := map[[16]byte]*configv1.ProviderRecord{}
	names := map[string]bool{}
	var out []*configv1.ProviderRecord
	for _, r := range recs {
		if !sameOwner(r.TenantID, owner) {
			b.fail("record %q: belongs to %s, not to %s", r.Name, ownerName(r.TenantID), ownerName(owner))
			continue
		}
		if !r.ID.Valid {
			b.fail("record %q: id is NULL", r.Name)
			continue
		}
		if names[r.Name] {
			b.fail("record %q: listed twice", r.Name)
			continue
		}
		names[r.Name] = true
		p, errs := recordrow.Record(r)
		b.failRow(errs...)
		byID[r.ID.Bytes] = p
		out = append(out, p)
	}

	b.recordModels(owner, byID, in)
	b.recordMembers(owner, byID, in)

	// A pool with no members cannot serve anything; leaving it out keeps the
	// owner's other records routable.
	return slices.DeleteFunc(out, func(p *configv1.ProviderRecord) bool {
		return p.BaseUrl == "" && len(p.Members) == 0
	})
}

// failRow records problems of rows the decoder (recordrow) found, as
// ErrInvalidRows.
func (b *builder) failRow(errs ...error) {
	for _, err := range errs {
		b.failErr(fmt.Errorf("%w: %w", err, ErrInvalidRows))
	}
}

// recordModels adds the models and prices of in to their records (byID),
// each ordered by model.
func (b *builder) recordModels(owner pgtype.UUID, byID map[[16]byte]*configv1.ProviderRecord, in recordRows) {
	models := slices.Clone(in.models)
	slices.SortFunc(models, func(a, b sqlc.RecordModel) int { return cmp.Compare(a.Model, b.Model) })
	for _, m := range models {
		p := byID[m.RecordID.Bytes]
		if p == nil || !m.RecordID.Valid {
			b.fail("model %q: its record %s is not among the records of %s", m.Model, m.RecordID.String(), ownerName(owner))
			continue
		}
		md, err := recordrow.Model(p.Name, m)
		if err != nil {
			b.failRow(err)
			continue
		}
		p.Models = append(p.Models, md)
	}
	prices := slices.Clone(in.recordPrices)
	slices.SortFunc(prices, func(a, b sqlc.RecordPrice) int { return cmp.Compare(a.Model, b.Model) })
	for _, rp := range prices {
		p := byID[rp.RecordID.Bytes]
		if p == nil || !rp.RecordID.Valid {
			b.fail("price of %q: its record %s is not among the records of %s", rp.Model, rp.RecordID.String(), ownerName(owner))
			continue
		}
		p.Prices = append(p.Prices, recordrow.RecordPrice(rp))
	}
}

// recordMembers adds the members of in to their records (byID), ordered by
// order then name, and their prices, by model.
func (b *builder) recordMembers(owner pgtype.UUID, byID map[[16]byte]*configv1.ProviderRecord, in recordRows) {
	scope := scopeOf(owner)
	members := slices.Clone(in.members)
	slices.SortFunc(members, func(a, b sqlc.PoolMember) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID.String(), b.ID.String()))
	})
	memberByID := map[[16]byte]*configv1.Member{}
	for _, m := range members {
		p := byID[m.RecordID.Bytes]
		switch {
		case p == nil || !m.RecordID.Valid:
			b.fail("member %q: its record %s is not among the records of %s", m.Name, m.RecordID.String(), ownerName(owner))
			continue
		case m.Scope != scope:
			b.fail("record %q: member %q: belongs to scope %s, not to %s", p.Name, m.Name, m.Scope.String(), ownerName(owner))
			continue
		case !m.ID.Valid:
			b.fail("record %q: member %q: id is NULL", p.Name, m.Name)
			continue
		case p.BaseUrl != "":
			b.fail("record %q: member %q: the record is plain (it has a base_url), so it cannot have members", p.Name, m.Name)
			continue
		}
		mp, errs := recordrow.Member(p.Name, m)
		b.failRow(errs...)
		memberByID[m.ID.Bytes] = mp
		p.Members = append(p.Members, mp)
	}
	mprices := slices.Clone(in.memberPrices)
	slices.SortFunc(mprices, func(a, b sqlc.MemberPrice) int { return cmp.Compare(a.Model, b.Model) })
	for _, mp := range mprices {
		m := memberByID[mp.MemberID.Bytes]
		if m == nil || !mp.MemberID.Valid {
			b.fail("member price of %q: its member %s is not among the members of %s", mp.Model, mp.MemberID.String(), ownerName(owner))
			continue
		}
		m.Prices = append(m.Prices, recordrow.MemberPrice(mp.Model, mp.InputMicros, mp.OutputMicros, mp.CacheReadMicros, mp.CacheWriteMicros))
	}
}
