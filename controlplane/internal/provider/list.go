package provider

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/recordrow"
	"weir.dev/db/sqlc"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Paging (admin common.proto): page_size 0 means 100, at most 1000.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// paginate returns one page of items and the token of the next page ("" on
// the last). A token is the opaque offset of the page's first item; the
// listings it pages are sorted and read whole, so an offset names the same
// place as long as the request's other fields stay the same.
func paginate[T any](items []T, size int32, token string) ([]T, string, error) {
	var ps problems
	n := int(size)
	switch {
	case size < 0:
		ps.add("page_size", CodeNegative, "must not be negative, got %d", size)
	case size == 0:
		n = defaultPageSize
	case size > maxPageSize:
		n = maxPageSize
	}
	start := 0
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		off, err2 := strconv.Atoi(string(raw))
		if err != nil || err2 != nil || off < 0 {
			ps.add("page_token", CodeInvalidValue, "is not a token this listing returned")
		}
		start = off
	}
	if err := ps.err(); err != nil {
		return nil, "", err
	}
	if start >= len(items) {
		return nil, "", nil
	}
	end := min(start+n, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return items[start:end], next, nil
}

// loadAll reads every record of the owner (only those whose ids are in
// only, when only is not nil) with models, prices, members and member
// prices, sorted by name.
func loadAll(ctx context.Context, q *sqlc.Queries, owner pgtype.UUID, only map[[16]byte]bool) ([]*stored, error) {
	rows, err := q.ListProviderRecords(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	models, err := q.ListOwnerRecordModels(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	prices, err := q.ListOwnerRecordPrices(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("list prices: %w", err)
	}
	members, err := q.ListOwnerPoolMembers(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	mprices, err := q.ListOwnerMemberPrices(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("list member prices: %w", err)
	}
	modelsOf := map[[16]byte][]sqlc.RecordModel{}
	for _, m := range models {
		modelsOf[m.RecordID.Bytes] = append(modelsOf[m.RecordID.Bytes], m)
	}
	pricesOf := map[[16]byte][]sqlc.RecordPrice{}
	for _, p := range prices {
		pricesOf[p.RecordID.Bytes] = append(pricesOf[p.RecordID.Bytes], p)
	}
	membersOf := map[[16]byte][]sqlc.PoolMember{}
	memberName := map[[16]byte]string{}
	for _, m := range members {
		membersOf[m.RecordID.Bytes] = append(membersOf[m.RecordID.Bytes], m)
		memberName[m.ID.Bytes] = m.Name
	}
	mpricesOf := map[[16]byte][]sqlc.MemberPrice{}
	for _, p := range mprices {
		mpricesOf[p.MemberID.Bytes] = append(mpricesOf[p.MemberID.Bytes], p)
	}
	var out []*stored
	for _, r := range rows {
		if only != nil && !only[r.ID.Bytes] {
			continue
		}
		byMember := map[string][]*configv1.Price{}
		for _, m := range membersOf[r.ID.Bytes] {
			for _, p := range mpricesOf[m.ID.Bytes] {
				byMember[m.Name] = append(byMember[m.Name], recordrow.MemberPrice(p.Model, p.InputMicros, p.OutputMicros, p.CacheReadMicros, p.CacheWriteMicros))
			}
		}
		st, err := assemble(r, modelsOf[r.ID.Bytes], pricesOf[r.ID.Bytes], membersOf[r.ID.Bytes], byMember)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *stored) int { return cmp.Compare(a.rec.Name, b.rec.Name) })
	return out, nil
}

func deleteParams(sc scope, name string) sqlc.DeleteProviderRecordParams {
	return sqlc.DeleteProviderRecordParams{TenantID: sc.owner, Name: name}
}

func shareParams(sc scope, name string) sqlc.ShareRecordParams {
	return sqlc.ShareRecordParams{TenantID: sc.owner, RecordName: name}
}

func unshareParams(sc scope, name string) sqlc.UnshareRecordParams {
	return sqlc.UnshareRecordParams{TenantID: sc.owner, RecordName: name}
}
