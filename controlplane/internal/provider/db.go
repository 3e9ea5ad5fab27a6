package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/recordrow"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// stored is a record as read from the database: the Record validation and
// resolution work on, and the rows the API reports ids and times from.
type stored struct {
	row     sqlc.ProviderRecord
	rec     *Record
	members map[string]sqlc.PoolMember // by name
}

// revision is the record's revision: its updated_at in microseconds since
// the epoch, which TouchProviderRecord moves forward on every change of the
// record or of one of its members.
func revisionOf(row sqlc.ProviderRecord) uint64 {
	return uint64(max(row.UpdatedAt.Time.UnixMicro(), 0))
}

// errRecordNotFound is the NotFound of a record the scope does not hold.
func errRecordNotFound(name string) error {
	return connect.NewError(connect.CodeNotFound, fmt.Errorf("provider record %s not found", strconv.Quote(name)))
}

// errMemberNotFound is the NotFound of a member the record does not have.
func errMemberNotFound(record, member string) error {
	return connect.NewError(connect.CodeNotFound, fmt.Errorf("record %s has no member %s", strconv.Quote(record), strconv.Quote(member)))
}

// loadRecord reads the owner's record of that name with its models, prices,
// members and member prices. lock takes the record row FOR UPDATE first, so
// that a read-modify-write of the record and its members is serialised.
// found is false when the owner has no such record.
func loadRecord(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID, name string, lock bool) (st *stored, found bool, err error) {
	var row sqlc.ProviderRecord
	if lock {
		row, err = q.GetProviderRecordForUpdate(ctx, sqlc.GetProviderRecordForUpdateParams{TenantID: owner, Name: name})
	} else {
		row, err = q.GetProviderRecord(ctx, sqlc.GetProviderRecordParams{TenantID: owner, Name: name})
	}
	if store.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read record: %w", err)
	}
	models, err := q.ListRecordModels(ctx, sqlc.ListRecordModelsParams{TenantID: owner, RecordName: name})
	if err != nil {
		return nil, false, fmt.Errorf("read record models: %w", err)
	}
	prices, err := q.ListRecordPrices(ctx, sqlc.ListRecordPricesParams{TenantID: owner, RecordName: name})
	if err != nil {
		return nil, false, fmt.Errorf("read record prices: %w", err)
	}
	members, err := q.ListPoolMembers(ctx, sqlc.ListPoolMembersParams{TenantID: owner, RecordName: name})
	if err != nil {
		return nil, false, fmt.Errorf("read members: %w", err)
	}
	mprices, err := q.ListMemberPrices(ctx, sqlc.ListMemberPricesParams{TenantID: owner, RecordName: name})
	if err != nil {
		return nil, false, fmt.Errorf("read member prices: %w", err)
	}
	byMember := map[string][]*configv1.Price{}
	for _, p := range mprices {
		byMember[p.MemberName] = append(byMember[p.MemberName], recordrow.MemberPrice(p.Model, p.InputMicros, p.OutputMicros, p.CacheReadMicros, p.CacheWriteMicros))
	}
	st, err = assemble(row, models, prices, members, byMember)
	if err != nil {
		return nil, false, err
	}
	return st, true, nil
}

// assemble builds a stored record from its rows, decoded by recordrow (as
// the snapshot decodes them); memberPrices are by member name. It refuses
// rows that break the schema's rules, naming every problem.
func assemble(row sqlc.ProviderRecord, models []sqlc.RecordModel, prices []sqlc.RecordPrice, members []sqlc.PoolMember, memberPrices map[string][]*configv1.Price) (*stored, error) {
	cr, errs := recordrow.Record(row)
	for _, m := range models {
		md, err := recordrow.Model(row.Name, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cr.Models = append(cr.Models, md)
	}
	for _, p := range prices {
		cr.Prices = append(cr.Prices, recordrow.RecordPrice(p))
	}
	st := &stored{
		row:     row,
		rec:     &Record{Name: row.Name, Managed: cr.GetManaged(), Pool: row.Pool, Spec: specOf(cr), preset: row.Preset},
		members: map[string]sqlc.PoolMember{},
	}
	for _, m := range members {
		cm, merrs := recordrow.Member(row.Name, m)
		errs = append(errs, merrs...)
		cm.Prices = memberPrices[m.Name]
		st.rec.Members = append(st.rec.Members, &Member{Name: m.Name, Spec: memberSpecOf(cm), preset: m.Preset})
		st.members[m.Name] = m
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return st, nil
}

// secretsOf returns the names of the owner's secrets with the hosts each is
// bound to (never their values).
func secretsOf(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID) (map[string][]string, error) {
	rows, err := q.ListSecrets(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", err)
	}
	out := make(map[string][]string, len(rows))
	for _, s := range rows {
		out[s.Name] = s.Hosts
	}
	return out, nil
}

// rulesOf returns the tenant's data rules, or nil for the cluster or a
// tenant without rules.
func rulesOf(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID) (*configv1.DataRules, error) {
	if !owner.Valid {
		return nil, nil
	}
	row, err := q.GetDataRules(ctx, owner)
	if store.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read data rules: %w", err)
	}
	tags, err := recordrow.StringMap(row.RequiredTags)
	if err != nil {
		return nil, fmt.Errorf("data rules: required tags: %w", err)
	}
	return &configv1.DataRules{AllowedRegions: row.AllowedRegions, NoRetainedData: row.NoRetainedData, RequiredTags: tags}, nil
}

// envOf returns what validation and warnings of the owner's records need.
func envOf(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID) (Env, error) {
	secrets, err := secretsOf(ctx, q, owner)
	if err != nil {
		return Env{}, err
	}
	rules, err := rulesOf(ctx, q, owner)
	if err != nil {
		return Env{}, err
	}
	return Env{Secrets: secrets, Rules: rules}, nil
}

// save writes after, the whole validated record a change produces, over
// before (nil for a new record) in tx, and returns the record's row after
// the change with its new revision. It writes only what differs, in an
// order the schema's triggers accept: members that go are removed before
// the record turns plain; the record turns into a pool before members are
// added.
func save(ctx context.Context, tx *store.Tx, owner pgtype.UUID, before *stored, after *Record) (sqlc.ProviderRecord, error) {
	q := tx.Q
	name := after.Name
	cols, err := recordColumnsOf(after, after.preset)
	if err != nil {
		return sqlc.ProviderRecord{}, err
	}
	var row sqlc.ProviderRecord
	if before == nil {
		if row, err = q.CreateProviderRecord(ctx, cols.create(owner, name)); err != nil {
			return row, fmt.Errorf("create record: %w", err)
		}
	} else {
		for _, m := range before.rec.Members {
			if after.member(m.Name) == nil {
				if _, err := q.RemovePoolMember(ctx, sqlc.RemovePoolMemberParams{TenantID: owner, RecordName: name, Name: m.Name}); err != nil {
					return row, fmt.Errorf("remove member %q: %w", m.Name, err)
				}
			}
		}
		if row, err = q.UpdateProviderRecord(ctx, cols.update(owner, name)); err != nil {
			return row, fmt.Errorf("update record: %w", err)
		}
	}

	var beforeSpec = cloneSpec(nil)
	if before != nil {
		beforeSpec = before.rec.Spec
	}
	if err := saveModels(ctx, q, owner, name, beforeSpec, after.Spec); err != nil {
		return row, err
	}
	if err := saveRecordPrices(ctx, q, owner, name, beforeSpec.GetPrices(), after.Spec.GetPrices()); err != nil {
		return row, err
	}
	for _, m := range after.Members {
		var old *Member
		if before != nil {
			old = before.rec.member(m.Name)
		}
		mc, err := memberColumnsOf(m.Spec, m.preset)
		if err != nil {
			return row, err
		}
		switch {
		case old == nil:
			if _, err := q.AddPoolMember(ctx, mc.add(owner, name, m.Name)); err != nil {
				return row, fmt.Errorf("add member %q: %w", m.Name, err)
			}
		case !sameMember(old, m):
			if _, err := q.UpdatePoolMember(ctx, mc.update(owner, name, m.Name)); err != nil {
				return row, fmt.Errorf("update member %q: %w", m.Name, err)
			}
		}
		var oldPrices []*configv1.Price
		if old != nil {
			oldPrices = old.Spec.GetPrices()
		}
		if err := saveMemberPrices(ctx, q, owner, name, m.Name, oldPrices, m.Spec.GetPrices()); err != nil {
			return row, err
		}
	}
	previous := row.UpdatedAt
	if before != nil && before.row.UpdatedAt.Time.After(previous.Time) {
		previous = before.row.UpdatedAt
	}
	updated, err := q.TouchProviderRecord(ctx, sqlc.TouchProviderRecordParams{Previous: previous, ID: row.ID})
	if err != nil {
		return row, fmt.Errorf("touch record: %w", err)
	}
	row.UpdatedAt = updated
	return row, nil
}

// sameMember reports whether a member's stored columns would not change
// (prices are compared and written separately).
func sameMember(a, b *Member) bool {
	if a.preset != b.preset {
		return false
	}
	as, bs := cloneMemberSpec(a.Spec), cloneMemberSpec(b.Spec)
	as.Prices, bs.Prices = nil, nil
	return proto.Equal(as, bs)
}

// saveModels replaces the record's models when they changed.
func saveModels(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID, name string, before, after *adminv1.ProviderSpec) error {
	same := len(before.GetModels()) == len(after.GetModels())
	for i := 0; same && i < len(after.GetModels()); i++ {
		same = proto.Equal(before.GetModels()[i], after.GetModels()[i])
	}
	if same {
		return nil
	}
	if _, err := q.DeleteRecordModels(ctx, sqlc.DeleteRecordModelsParams{TenantID: owner, RecordName: name}); err != nil {
		return fmt.Errorf("replace models: %w", err)
	}
	models := make([]string, 0, len(after.GetModels()))
	kinds := make([]string, 0, len(after.GetModels()))
	for _, m := range after.GetModels() {
		models = append(models, m.GetName())
		kinds = append(kinds, modelKindName(m.GetKind()))
	}
	if len(models) == 0 {
		return nil
	}
	if _, err := q.AddRecordModels(ctx, sqlc.AddRecordModelsParams{Models: models, Kinds: kinds, TenantID: owner, RecordName: name}); err != nil {
		return fmt.Errorf("replace models: %w", err)
	}
	return nil
}

// saveRecordPrices deletes the prices that went and writes those that are
// new or changed.
func saveRecordPrices(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID, name string, before, after []*configv1.Price) error {
	for _, p := range before {
		if findPrice(after, p.GetModel()) == nil {
			if _, err := q.DeleteRecordPrice(ctx, sqlc.DeleteRecordPriceParams{TenantID: owner, RecordName: name, Model: p.GetModel()}); err != nil {
				return fmt.Errorf("delete price of %q: %w", p.GetModel(), err)
			}
		}
	}
	for _, p := range after {
		if old := findPrice(before, p.GetModel()); old != nil && proto.Equal(old, p) {
			continue
		}
		if p.InputMicros == nil || p.OutputMicros == nil {
			return errors.New("record price without input or output: validation let it through")
		}
		if _, err := q.UpsertRecordPrice(ctx, sqlc.UpsertRecordPriceParams{
			TenantID: owner, RecordName: name, Model: p.GetModel(),
			InputMicros: p.GetInputMicros(), OutputMicros: p.GetOutputMicros(),
			CacheReadMicros: int8Of(p.CacheReadMicros), CacheWriteMicros: int8Of(p.CacheWriteMicros),
		}); err != nil {
			return fmt.Errorf("write price of %q: %w", p.GetModel(), err)
		}
	}
	return nil
}

// saveMemberPrices is saveRecordPrices for one member.
func saveMemberPrices(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID, record, member string, before, after []*configv1.Price) error {
	for _, p := range before {
		if findPrice(after, p.GetModel()) == nil {
			if _, err := q.DeleteMemberPrice(ctx, sqlc.DeleteMemberPriceParams{TenantID: owner, RecordName: record, MemberName: member, Model: p.GetModel()}); err != nil {
				return fmt.Errorf("delete price of %q on member %q: %w", p.GetModel(), member, err)
			}
		}
	}
	for _, p := range after {
		if old := findPrice(before, p.GetModel()); old != nil && proto.Equal(old, p) {
			continue
		}
		if _, err := q.UpsertMemberPrice(ctx, sqlc.UpsertMemberPriceParams{
			TenantID: owner, RecordName: record, MemberName: member, Model: p.GetModel(),
			InputMicros: int8Of(p.InputMicros), OutputMicros: int8Of(p.OutputMicros),
			CacheReadMicros: int8Of(p.CacheReadMicros), CacheWriteMicros: int8Of(p.CacheWriteMicros),
		}); err != nil {
			return fmt.Errorf("write price of %q on member %q: %w", p.GetModel(), member, err)
		}
	}
	return nil
}
