package admin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// Limits of API key restrictions (keys.proto).
const (
	maxKeyList  = 256
	maxModelLen = 256
)

// keyQueries are the reads ApiKeyService makes.
type keyQueries interface {
	tenantGetter
	ListAPIKeys(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.APIKey, error)
	ListKeysLastUsed(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.ListKeysLastUsedRow, error)
	ListAuditForObjects(ctx context.Context, arg sqlc.ListAuditForObjectsParams) ([]sqlc.ListAuditForObjectsRow, error)
}

// ApiKeyService implements weir.admin.v1.ApiKeyService.
type ApiKeyService struct {
	base
	q       keyQueries
	revoker Revoker
}

// CreateApiKey creates a key and returns its plaintext once. Tenant admins.
func (s *ApiKeyService) CreateApiKey(ctx context.Context, req *connect.Request[adminv1.CreateApiKeyRequest]) (*connect.Response[adminv1.CreateApiKeyResponse], error) {
	m := req.Msg
	p, t, err := scope(ctx, s.q, m.GetTenant(), auth.RoleTenantAdmin)
	if err != nil {
		return nil, err
	}
	if err := checkNewKey(m); err != nil {
		return nil, err
	}
	key, sum, err := NewKey(s.rand)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	var k sqlc.APIKey
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		if err := knownRecords(ctx, tx.Q, t.ID, m.GetAllowedRecords()); err != nil {
			return err
		}
		var err error
		k, err = tx.Q.CreateAPIKey(ctx, sqlc.CreateAPIKeyParams{
			TenantID: t.ID, Name: m.GetName(), SHA256: sum,
			AllowedModels: orEmptySlice(m.GetAllowedModels()), AllowedRecords: orEmptySlice(m.GetAllowedRecords()),
			Regions: orEmptySlice(m.GetRegions()),
			RPM:     m.GetLimits().GetRpm(), MaxInFlight: m.GetLimits().GetMaxInFlight(),
		})
		if err != nil {
			return err
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "create", "keys", k.Name, map[string]any{
			"id": store.UUIDString(k.ID), "prefix": keyPrefix(key),
			"allowed_models": k.AllowedModels, "allowed_records": k.AllowedRecords, "regions": k.Regions,
			"rpm": k.RPM, "max_in_flight": k.MaxInFlight,
		})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	out := keyProto(k)
	out.KeyPrefix, out.CreatedBy = keyPrefix(key), p.Name
	return connect.NewResponse(&adminv1.CreateApiKeyResponse{ApiKey: out, Key: key}), nil
}

// checkNewKey checks a CreateApiKeyRequest on its own — tenant, name,
// allowed models, allowed records' names, regions and limits, in that
// order — and returns nil or an error with every problem.
func checkNewKey(m *adminv1.CreateApiKeyRequest) error {
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "API keys belong to a tenant; a tenant is required")
	}
	apierr.Name(&ps, "name", m.GetName())
	checkList(&ps, "allowed_models", m.GetAllowedModels(), func(f, v string) {
		if v == "" || len(v) > maxModelLen || strings.ContainsAny(v, " \t\r\n") {
			ps.Addf(f, apierr.CodeInvalidValue, "a model name is 1-%d characters without spaces", maxModelLen)
		}
	})
	checkList(&ps, "allowed_records", m.GetAllowedRecords(), func(f, v string) { apierr.Name(&ps, f, v) })
	checkList(&ps, "regions", m.GetRegions(), func(f, v string) { apierr.RegionGlob(&ps, f, v) })
	// A key's limits (R-CAP-2) only narrow its tenant's, so tenant admins
	// may set any in range.
	ValidateLimits(&ps, "limits", m.GetLimits())
	if ps.Len() > 0 {
		return ps.Err()
	}
	return nil
}

// knownRecords refuses, with a not_found problem per name, the records
// names that are neither the tenant's own nor managed ones shared with
// it; it reads nothing when names is empty.
func knownRecords(ctx context.Context, q *sqlc.Queries, tenantID pgtype.UUID, names []string) error {
	if len(names) == 0 {
		return nil
	}
	known := map[string]bool{}
	own, err := q.ListProviderRecords(ctx, tenantID)
	if err != nil {
		return err
	}
	shared, err := q.ListSharedRecords(ctx, tenantID)
	if err != nil {
		return err
	}
	for _, r := range append(own, shared...) {
		known[r.Name] = true
	}
	var ps apierr.Problems
	for i, r := range names {
		if !known[r] {
			ps.Addf(fmt.Sprintf("allowed_records[%d]", i), apierr.CodeNotFound, "record %q is neither the tenant's nor shared with it", r)
		}
	}
	return ps.Err()
}

// ListApiKeys lists the tenant's keys without key material.
func (s *ApiKeyService) ListApiKeys(ctx context.Context, req *connect.Request[adminv1.ListApiKeysRequest]) (*connect.Response[adminv1.ListApiKeysResponse], error) {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	size := pageSize(&ps, m.GetPageSize())
	off := offsetToken(&ps, m.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	keys, err := s.q.ListAPIKeys(ctx, t.ID)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	var out []*adminv1.ApiKey
	var ids []string
	for _, k := range keys {
		if k.RevokedAt.Valid && !m.GetIncludeRevoked() {
			continue
		}
		out = append(out, keyProto(k))
		ids = append(ids, store.UUIDString(k.ID))
	}
	items, next := page(out, off, size)
	if len(items) > 0 {
		created, err := s.q.ListAuditForObjects(ctx, sqlc.ListAuditForObjectsParams{ObjectKind: "keys", Action: "create", Ids: ids})
		if err != nil {
			return nil, apierr.FromStore(err)
		}
		used, err := s.q.ListKeysLastUsed(ctx, t.ID)
		if err != nil {
			return nil, apierr.FromStore(err)
		}
		for _, k := range items {
			for _, c := range created {
				if c.ObjectID == k.Id {
					k.CreatedBy, k.KeyPrefix = c.Actor, c.Prefix
				}
			}
			for _, u := range used {
				if store.UUIDString(u.KeyID) == k.Id {
					k.LastUsedAt = ts(u.LastUsed)
				}
			}
		}
	}
	return connect.NewResponse(&adminv1.ListApiKeysResponse{ApiKeys: items, NextPageToken: next}), nil
}

// RevokeApiKey revokes the tenant's active key of that name. Tenant admins.
func (s *ApiKeyService) RevokeApiKey(ctx context.Context, req *connect.Request[adminv1.RevokeApiKeyRequest]) (*connect.Response[adminv1.RevokeApiKeyResponse], error) {
	m := req.Msg
	p, t, err := scope(ctx, s.q, m.GetTenant(), auth.RoleTenantAdmin)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	apierr.Name(&ps, "name", m.GetName())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	var k sqlc.APIKey
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var err error
		k, err = tx.Q.RevokeAPIKey(ctx, sqlc.RevokeAPIKeyParams{TenantID: t.ID, Name: m.GetName()})
		if err != nil {
			if store.IsNotFound(err) {
				return apierr.NotFound("API key", m.GetName())
			}
			return err
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "revoke", "keys", k.Name, map[string]any{"id": store.UUIDString(k.ID)})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	s.sendRevoke(ctx, t.ID, k)
	return connect.NewResponse(&adminv1.RevokeApiKeyResponse{ApiKey: keyProto(k)}), nil
}

// sendRevoke tells every edge at once that k is revoked (after the commit:
// the database is the source of truth, and an edge refused a revocation
// that was rolled back would refuse a good key). When it cannot be sent the
// revocation still stands and reaches edges in the tenant's next snapshot,
// so the failure is logged, not returned.
func (s *ApiKeyService) sendRevoke(ctx context.Context, tenant pgtype.UUID, k sqlc.APIKey) {
	if s.revoker == nil {
		return
	}
	var id [16]byte
	if _, err := io.ReadFull(s.rand, id[:]); err != nil {
		s.log.WarnContext(ctx, "key revocation not sent to edges", "key", k.Name, "err", err)
		return
	}
	id[6], id[8] = id[6]&0x0f|0x40, id[8]&0x3f|0x80
	cmd := &telemetryv1.Command{
		Id:       store.UUIDString(pgtype.UUID{Bytes: id, Valid: true}),
		Command:  &telemetryv1.Command_RevokeKey{RevokeKey: &telemetryv1.RevokeKey{TenantId: store.UUIDString(tenant), Sha256: k.SHA256}},
		IssuedAt: timestamppb.New(s.now()),
	}
	if err := s.revoker.RevokeKey(ctx, cmd); err != nil {
		s.log.WarnContext(ctx, "key revocation not sent to edges; they learn it from the next snapshot", "key", k.Name, "err", err)
	}
}

// checkList checks a restriction list: at most maxKeyList entries, each
// checked by each and listed once.
func checkList(ps *apierr.Problems, field string, list []string, each func(field, v string)) {
	if len(list) > maxKeyList {
		ps.Addf(field, apierr.CodeTooMany, "%d entries; at most %d", len(list), maxKeyList)
	}
	for i, v := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		before := ps.Len()
		each(f, v)
		if ps.Len() == before && slices.Index(list, v) < i {
			ps.Add(f, apierr.CodeDuplicate, "listed twice")
		}
	}
}

func keyProto(k sqlc.APIKey) *adminv1.ApiKey {
	return &adminv1.ApiKey{
		Id: store.UUIDString(k.ID), Name: k.Name,
		AllowedModels: k.AllowedModels, AllowedRecords: k.AllowedRecords, Regions: k.Regions,
		CreatedAt: ts(k.CreatedAt), RevokedAt: ts(k.RevokedAt),
		Limits: &configv1.CallerLimits{Rpm: k.RPM, MaxInFlight: k.MaxInFlight},
	}
}
