package provider

import (
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// wouldBeStored returns a validated, canonical record rec as loadRecord
// would read it back once save had written it over before (nil: a new
// record of owner), without writing anything: the columns are computed by
// the functions save uses (recordColumnsOf, memberColumnsOf) and read back
// by those loadRecord uses (assemble), so a validate_only answer shows what
// the real request would store, defaults and normal forms included.
//
// The rows keep before's ids, creation times and updated_at, hence its
// revision: the answer's revision is the one the preview was computed
// against, to send as expected_revision with the real request. A record or
// member not yet created has no id and no times.
func wouldBeStored(owner pgtype.UUID, before *stored, rec *Record) (*stored, error) {
	cols, err := recordColumnsOf(rec, rec.preset)
	if err != nil {
		return nil, err
	}
	row := sqlc.ProviderRecord{TenantID: owner, Name: rec.Name}
	oldMembers := map[string]sqlc.PoolMember{}
	if before != nil {
		row, oldMembers = before.row, before.members
	}
	copyColumns(&row, cols)
	var models []sqlc.RecordModel
	for _, m := range rec.Spec.GetModels() {
		models = append(models, sqlc.RecordModel{RecordID: row.ID, Model: m.GetName(), Kind: modelKindName(m.GetKind())})
	}
	var prices []sqlc.RecordPrice
	for _, p := range rec.Spec.GetPrices() {
		prices = append(prices, sqlc.RecordPrice{
			RecordID: row.ID, Model: p.GetModel(), InputMicros: p.GetInputMicros(), OutputMicros: p.GetOutputMicros(),
			CacheReadMicros: int8Of(p.CacheReadMicros), CacheWriteMicros: int8Of(p.CacheWriteMicros),
		})
	}
	var members []sqlc.PoolMember
	memberPrices := map[string][]*configv1.Price{}
	for _, m := range sortedMembers(rec) { // as ListPoolMembers orders them
		mc, err := memberColumnsOf(m.Spec, m.preset)
		if err != nil {
			return nil, err
		}
		mrow, found := oldMembers[m.Name]
		if !found {
			mrow = sqlc.PoolMember{RecordID: row.ID, Name: m.Name}
		}
		copyColumns(&mrow, mc)
		members = append(members, mrow)
		for _, p := range m.Spec.GetPrices() {
			memberPrices[m.Name] = append(memberPrices[m.Name],
				memberPriceFromRow(p.GetModel(), int8Of(p.InputMicros), int8Of(p.OutputMicros), int8Of(p.CacheReadMicros), int8Of(p.CacheWriteMicros)))
		}
	}
	return assemble(row, models, prices, members, memberPrices)
}

// copyColumns sets each field of the row *dst to the field of the same
// name of cols (recordColumns into sqlc.ProviderRecord, memberColumns into
// sqlc.PoolMember): the columns save writes with those values, copied
// without naming them, so a column added to both travels by itself. A field
// without a twin of the same type panics, a programming error that
// TestColumnsHaveRowTwins catches first.
func copyColumns(dst any, cols any) {
	d, c := reflect.ValueOf(dst).Elem(), reflect.ValueOf(cols)
	for i := 0; i < c.NumField(); i++ {
		name := c.Type().Field(i).Name
		f := d.FieldByName(name)
		if !f.IsValid() || f.Type() != c.Field(i).Type() {
			panic(fmt.Sprintf("copyColumns: %s has no field %s of type %s", d.Type(), name, c.Field(i).Type()))
		}
		f.Set(c.Field(i))
	}
}
