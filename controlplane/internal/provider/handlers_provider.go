package provider

import (
	"context"
	"errors"
	"slices"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
)

// Audit object types of this package (store.Tx.Audit).
const (
	auditProviders = "providers"
)

func auditMembers(record string) string { return "providers/" + record + "/members" }

// outcome is what commit makes of a change.
type outcome struct {
	// st is the record as stored after the change, or as it would be
	// stored when the change was only validated (wouldBeStored; with
	// problems, the record as the request builds it).
	st *stored
	// saved is true when the change was written; false for validate_only,
	// which writes nothing, audits nothing and announces nothing.
	saved    bool
	warnings []*adminv1.Warning
	// changes are the fields the change sets (Changes).
	changes []*adminv1.Change
	// problems are every rule a validate_only change breaks; a change to be
	// saved fails with them instead.
	problems []*adminv1.Problem
}

// commit finishes a change whose result is rec: it validates the whole
// record against the owner's secrets (merging the problems found earlier
// in the request, earlier), runs check (may be nil) once the record is
// valid, writes it over before (nil: a new record), announces the change
// for the owner's snapshot, and returns the record as stored with its
// warnings and changes. Nothing is written when any problem is found or
// check fails.
//
// With validateOnly every step up to the write runs as for a real change —
// the very same checks, in the same order — and commit stops there: the
// outcome describes the record as it would be stored, and the validation
// problems are returned in it instead of as an error (check runs only when
// there are none, as for a real change). Any other refusal is an error
// either way.
func (s *Service) commit(ctx context.Context, tx *store.Tx, sc scope, before *stored, rec *Record, earlier error, check func() error, validateOnly bool) (*outcome, error) {
	env, err := envOf(ctx, tx.Q, sc.owner)
	if err != nil {
		return nil, err
	}
	var ps problems
	ps.merge(earlier)
	ps.merge(Validate(rec, env))
	invalid := ps.err()
	switch {
	case invalid != nil && !validateOnly:
		return nil, invalid
	case invalid == nil && check != nil:
		if err := check(); err != nil {
			return nil, err
		}
	}
	canonical(rec)
	if validateOnly {
		return preview(sc.owner, before, rec, env, invalid)
	}
	if _, err := save(ctx, tx, sc.owner, before, rec); err != nil {
		return nil, err
	}
	if err := tx.Changed(ctx, sc.owner); err != nil {
		return nil, err
	}
	st, found, err := loadRecord(ctx, tx.Q, sc.owner, rec.Name, false)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errors.New("record vanished inside its own transaction")
	}
	return &outcome{st: st, saved: true, warnings: Warnings(st.rec, env), changes: Changes(recordOf(before), st.rec)}, nil
}

// preview is commit's outcome for a validate_only change that passed every
// check but the validation problems in invalid (nil: none): the record as
// it would be stored when it is valid, else as the request builds it (it
// cannot be stored), with its warnings, changes and problems.
func preview(owner pgtype.UUID, before *stored, rec *Record, env Env, invalid error) (*outcome, error) {
	var st *stored
	if invalid == nil {
		var err error
		if st, err = wouldBeStored(owner, before, rec); err != nil {
			return nil, err
		}
	} else {
		st = &stored{row: sqlc.ProviderRecord{TenantID: owner, Name: rec.Name}, rec: rec, members: map[string]sqlc.PoolMember{}}
		if before != nil {
			st.row, st.members = before.row, before.members
		}
		st.row.Preset = rec.preset
	}
	return &outcome{
		st: st, warnings: Warnings(st.rec, env), changes: Changes(recordOf(before), st.rec), problems: problemProtos(invalid),
	}, nil
}

// recordOf is the record of a stored one, nil for none.
func recordOf(st *stored) *Record {
	if st == nil {
		return nil
	}
	return st.rec
}

// nameTaken reports AlreadyExists when the scope already has a record of
// that name, or (for a tenant) a managed record of that name is shared with
// it: "record/model" must stay unambiguous (R-MODEL-1).
func nameTaken(ctx context.Context, tx *store.Tx, sc scope, name string) error {
	if _, found, err := loadRecord(ctx, tx.Q, sc.owner, name, false); err != nil {
		return err
	} else if found {
		return connect.NewError(connect.CodeAlreadyExists, errors.New("a provider record named "+quote(name)+" already exists"))
	}
	if sc.managed() {
		return nil
	}
	if _, found, err := sharedRecordNamed(ctx, tx.Q, sc.owner, name, false); err != nil {
		return err
	} else if found {
		return connect.NewError(connect.CodeAlreadyExists, errors.New("a managed record named "+quote(name)+" is shared with the tenant; pick another name"))
	}
	return nil
}

// errInternalFlag refuses "internal" to anyone but cluster admins.
var errInternalFlag = connect.NewError(connect.CodePermissionDenied, errors.New("only cluster admins may mark a record internal"))

// CreateProvider implements adminv1connect.ProviderServiceHandler.
func (s *Service) CreateProvider(ctx context.Context, req *connect.Request[adminv1.CreateProviderRequest]) (*connect.Response[adminv1.CreateProviderResponse], error) {
	m := req.Msg
	out := &adminv1.CreateProviderResponse{}
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		if m.GetSpec().GetInternal() && !sc.principal.IsClusterAdmin() {
			return errInternalFlag
		}
		rec, earlier := buildCreate(m, sc.managed())
		o, err := s.commit(ctx, tx, sc, nil, rec, earlier, func() error { return nameTaken(ctx, tx, sc, rec.Name) }, m.GetValidateOnly())
		if err != nil {
			return err
		}
		if o.saved {
			if err := tx.Audit(ctx, "create", auditProviders, rec.Name, map[string]any{
				"id": store.UUIDString(o.st.row.ID), "preset": rec.preset, "pool": rec.Pool, "members": memberNames(o.st.rec),
			}); err != nil {
				return err
			}
		}
		out.Record, out.Warnings, out.Problems, out.Changes = recordProto(o.st, sc.tenant, nil), o.warnings, o.problems, o.changes
		return nil
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.ProviderServiceCreateProviderProcedure, err)
	}
	return connect.NewResponse(out), nil
}

// buildCreate turns a CreateProviderRequest into the record it asks for:
// presets resolved (the record's first, then each member's against it),
// server defaults filled in, every field named by its request path. It
// returns the problems of the presets; Validate finds the rest.
func buildCreate(m *adminv1.CreateProviderRequest, managed bool) (*Record, error) {
	var ps problems
	reqSpec := m.GetSpec()
	if reqSpec == nil {
		reqSpec = &adminv1.ProviderSpec{}
	}
	pool := len(m.GetMembers()) > 0
	spec, err := ResolveRecordPreset(m.GetPreset(), reqSpec, pool, GivenBySpec(reqSpec), "preset")
	ps.merge(err)
	normalizeRecord(spec)
	rec := &Record{Name: m.GetName(), Managed: managed, Pool: pool, Spec: spec, preset: PresetName(m.GetPreset())}
	for i, nm := range m.GetMembers() {
		path := "members" + idx(i)
		ms := nm.GetSpec()
		if ms == nil {
			ms = &adminv1.PoolMemberSpec{}
		}
		resolved, err := ResolveMemberPreset(nm.GetPreset(), spec, ms, GivenBySpec(ms), path+".preset")
		ps.merge(err)
		normalizeMember(spec, resolved)
		rec.Members = append(rec.Members, &Member{
			Name: nm.GetName(), Spec: resolved, preset: PresetName(nm.GetPreset()),
			namePath: path + ".name", specPath: path + ".spec",
		})
	}
	return rec, ps.err()
}

func memberNames(r *Record) []string {
	var out []string
	for _, m := range sortedMembers(r) {
		out = append(out, m.Name)
	}
	return out
}

// UpdateProvider implements adminv1connect.ProviderServiceHandler.
func (s *Service) UpdateProvider(ctx context.Context, req *connect.Request[adminv1.UpdateProviderRequest]) (*connect.Response[adminv1.UpdateProviderResponse], error) {
	m := req.Msg
	out := &adminv1.UpdateProviderResponse{}
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		before, found, err := loadRecord(ctx, tx.Q, sc.owner, m.GetName(), true)
		if err != nil {
			return err
		}
		if !found {
			return errRecordNotFound(m.GetName())
		}
		if err := checkRevision(before, m.GetExpectedRevision()); err != nil {
			return err
		}
		rec, earlier := buildUpdate(before.rec, m)
		if rec.Spec.GetInternal() != before.rec.Spec.GetInternal() && !sc.principal.IsClusterAdmin() {
			return errInternalFlag
		}
		o, err := s.commit(ctx, tx, sc, before, rec, earlier, nil, m.GetValidateOnly())
		if err != nil {
			return err
		}
		if o.saved {
			if err := tx.Audit(ctx, "update", auditProviders, rec.Name, map[string]any{
				"id": store.UUIDString(o.st.row.ID), "paths": m.GetUpdateMask().GetPaths(), "preset": PresetName(m.GetPreset()),
			}); err != nil {
				return err
			}
		}
		out.Record, out.Warnings, out.Problems, out.Changes = recordProto(o.st, sc.tenant, nil), o.warnings, o.problems, o.changes
		return nil
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.ProviderServiceUpdateProviderProcedure, err)
	}
	return connect.NewResponse(out), nil
}

// buildUpdate applies an UpdateProviderRequest to the stored record: the
// mask's paths from the request's spec, then the preset (when given) on
// every field it determines that the mask does not name, then the server's
// defaults. The members stay as they are and are validated with the
// result.
func buildUpdate(stored *Record, m *adminv1.UpdateProviderRequest) (*Record, error) {
	var ps problems
	rec := stored.clone()
	paths := m.GetUpdateMask().GetPaths()
	if len(paths) == 0 && m.GetPreset() == adminv1.Preset_PRESET_UNSPECIFIED {
		ps.add("update_mask", CodeRequired, "missing: name the fields to change (or give a preset)")
	}
	reqSpec := m.GetSpec()
	if reqSpec == nil {
		reqSpec = &adminv1.ProviderSpec{}
	}
	ps.merge(applyMask(rec.Spec, reqSpec, paths, recordNested, "update_mask"))
	if m.GetPreset() != adminv1.Preset_PRESET_UNSPECIFIED {
		spec, err := ResolveRecordPreset(m.GetPreset(), rec.Spec, rec.Pool, GivenByMask(paths), "preset")
		ps.merge(err)
		rec.Spec = spec
		rec.preset = PresetName(m.GetPreset())
	}
	normalizeRecord(rec.Spec)
	return rec, ps.err()
}

// GetProvider implements adminv1connect.ProviderServiceHandler.
func (s *Service) GetProvider(ctx context.Context, req *connect.Request[adminv1.GetProviderRequest]) (*connect.Response[adminv1.GetProviderResponse], error) {
	m := req.Msg
	detail, err := s.getDetail(ctx, m.GetTenant(), m.GetName())
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.ProviderServiceGetProviderProcedure, err)
	}
	return connect.NewResponse(&adminv1.GetProviderResponse{Detail: detail}), nil
}

// getDetail is GetProvider: the scope's own record of that name, else (for
// a tenant) the managed record of that name shared with it, read-only and
// redacted unless the caller is a cluster admin.
func (s *Service) getDetail(ctx context.Context, tenant, name string) (*adminv1.ProviderDetail, error) {
	var d *adminv1.ProviderDetail
	err := s.read(ctx, tenant, func(q *sqlc.Queries, sc scope) error {
		st, found, err := loadRecord(ctx, q, sc.owner, name, false)
		if err != nil {
			return err
		}
		owner, shared := sc.owner, false
		if !found && !sc.managed() {
			if st, found, err = sharedRecordNamed(ctx, q, sc.owner, name, false); err != nil {
				return err
			}
			owner, shared = store.Cluster, true
		}
		if !found {
			return errRecordNotFound(name)
		}
		views, err := s.edgeViews(ctx, q, owner, name)
		if err != nil {
			return err
		}
		env, err := envOf(ctx, q, owner)
		if err != nil {
			return err
		}
		var sharedWith []string
		if sc.principal.IsClusterAdmin() && st.rec.Managed {
			shares, err := sharesOf(ctx, q)
			if err != nil {
				return err
			}
			sharedWith = shares[name]
		}
		d = &adminv1.ProviderDetail{
			Record:   recordProto(st, sc.tenant, sharedWith),
			Members:  memberDetails(st, views),
			Warnings: Warnings(st.rec, env),
		}
		d.RoutingSummary = RoutingSummary(d)
		if shared && !sc.principal.IsClusterAdmin() {
			redactShared(d.Record, d.Members)
			// Secret and host warnings would name the cluster's secrets and
			// endpoints; only pricing is the tenant's business.
			d.Warnings = slices.DeleteFunc(d.Warnings, func(w *adminv1.Warning) bool { return w.GetCode() != WarnModelUnpriced })
		}
		return nil
	})
	return d, err
}

// ListProviders implements adminv1connect.ProviderServiceHandler.
func (s *Service) ListProviders(ctx context.Context, req *connect.Request[adminv1.ListProvidersRequest]) (*connect.Response[adminv1.ListProvidersResponse], error) {
	m := req.Msg
	out, err := s.listProviders(ctx, m)
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.ProviderServiceListProvidersProcedure, err)
	}
	return connect.NewResponse(out), nil
}

func (s *Service) listProviders(ctx context.Context, m *adminv1.ListProvidersRequest) (*adminv1.ListProvidersResponse, error) {
	var recs []*adminv1.ProviderRecord
	err := s.read(ctx, m.GetTenant(), func(q *sqlc.Queries, sc scope) error {
		all, err := records(ctx, q, sc, m.GetIncludeShared())
		if err != nil {
			return err
		}
		var shares map[string][]string
		if sc.principal.IsClusterAdmin() {
			if shares, err = sharesOf(ctx, q); err != nil {
				return err
			}
		}
		for _, e := range all {
			var with []string
			if e.st.rec.Managed {
				with = shares[e.st.rec.Name]
			}
			r := recordProto(e.st, sc.tenant, with)
			if e.shared && !sc.principal.IsClusterAdmin() {
				redactShared(r, nil)
			}
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	page, next, err := paginate(recs, m.GetPageSize(), m.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &adminv1.ListProvidersResponse{Records: page, NextPageToken: next}, nil
}

// listed is one record of a listing, and whether it is a managed record
// shared with the tenant of the request.
type listed struct {
	st     *stored
	shared bool
}

// records lists the scope's own records by name, then, with includeShared
// and a tenant scope, the managed records shared with the tenant by name.
func records(ctx context.Context, q *sqlc.Queries, sc scope, includeShared bool) ([]listed, error) {
	own, err := loadAll(ctx, q, sc.owner, nil)
	if err != nil {
		return nil, err
	}
	var out []listed
	for _, st := range own {
		out = append(out, listed{st: st})
	}
	if includeShared && !sc.managed() {
		rows, err := q.ListSharedRecords(ctx, sc.owner)
		if err != nil {
			return nil, err
		}
		ids := map[[16]byte]bool{}
		for _, r := range rows {
			ids[r.ID.Bytes] = true
		}
		shared, err := loadAll(ctx, q, store.Cluster, ids)
		if err != nil {
			return nil, err
		}
		for _, st := range shared {
			out = append(out, listed{st: st, shared: true})
		}
	}
	return out, nil
}

// DeleteProvider implements adminv1connect.ProviderServiceHandler.
func (s *Service) DeleteProvider(ctx context.Context, req *connect.Request[adminv1.DeleteProviderRequest]) (*connect.Response[adminv1.DeleteProviderResponse], error) {
	m := req.Msg
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		st, found, err := loadRecord(ctx, tx.Q, sc.owner, m.GetName(), true)
		if err != nil {
			return err
		}
		if !found {
			return errRecordNotFound(m.GetName())
		}
		if err := checkRevision(st, m.GetExpectedRevision()); err != nil {
			return err
		}
		var unshared []string
		if sc.managed() {
			shares, err := sharesOf(ctx, tx.Q)
			if err != nil {
				return err
			}
			unshared = shares[m.GetName()]
		}
		// Shares, members, prices, models and member views go with the
		// record (ON DELETE CASCADE).
		if _, err := tx.Q.DeleteProviderRecord(ctx, deleteParams(sc, m.GetName())); err != nil {
			return err
		}
		if err := tx.Changed(ctx, sc.owner); err != nil {
			return err
		}
		return tx.Audit(ctx, "delete", auditProviders, m.GetName(), map[string]any{
			"id": store.UUIDString(st.row.ID), "unshared_from": unshared,
		})
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.ProviderServiceDeleteProviderProcedure, err)
	}
	return connect.NewResponse(&adminv1.DeleteProviderResponse{}), nil
}

// ShareProvider implements adminv1connect.ProviderServiceHandler.
func (s *Service) ShareProvider(ctx context.Context, req *connect.Request[adminv1.ShareProviderRequest]) (*connect.Response[adminv1.ShareProviderResponse], error) {
	rec, err := s.share(ctx, req.Msg.GetName(), req.Msg.GetTenant(), true)
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.ProviderServiceShareProviderProcedure, err)
	}
	return connect.NewResponse(&adminv1.ShareProviderResponse{Record: rec}), nil
}

// UnshareProvider implements adminv1connect.ProviderServiceHandler.
func (s *Service) UnshareProvider(ctx context.Context, req *connect.Request[adminv1.UnshareProviderRequest]) (*connect.Response[adminv1.UnshareProviderResponse], error) {
	rec, err := s.share(ctx, req.Msg.GetName(), req.Msg.GetTenant(), false)
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.ProviderServiceUnshareProviderProcedure, err)
	}
	return connect.NewResponse(&adminv1.UnshareProviderResponse{Record: rec}), nil
}

// share enables (on) or disables a managed record for a tenant (R-MODEL-3).
// Cluster admins only. A share that is already as asked changes nothing and
// writes nothing. Sharing with a tenant that has its own record of that name
// is FailedPrecondition. A change is announced for the cluster snapshot
// (which carries the shares) and for the tenant.
func (s *Service) share(ctx context.Context, name, tenant string, on bool) (*adminv1.ProviderRecord, error) {
	p, err := authorize(ctx, "", true)
	if err != nil {
		return nil, err
	}
	var out *adminv1.ProviderRecord
	err = s.store.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var ps problems
		if !ValidName(name) {
			ps.add("name", CodeInvalidName, "%s %s", quote(name), nameRule)
		}
		if !ValidName(tenant) {
			ps.add("tenant", CodeInvalidName, "%s %s", quote(tenant), nameRule)
		}
		if err := ps.err(); err != nil {
			return err
		}
		st, found, err := loadRecord(ctx, tx.Q, store.Cluster, name, true)
		if err != nil {
			return err
		}
		if !found {
			return errRecordNotFound(name)
		}
		sc, err := resolve(ctx, tx.Q, p, tenant)
		if err != nil {
			return err
		}
		shares, err := sharesOf(ctx, tx.Q)
		if err != nil {
			return err
		}
		already := slices.Contains(shares[name], tenant)
		switch {
		case on && !already:
			if _, own, err := loadRecord(ctx, tx.Q, sc.owner, name, false); err != nil {
				return err
			} else if own {
				return connect.NewError(connect.CodeFailedPrecondition, errors.New("tenant "+quote(tenant)+" has its own record named "+quote(name)+"; names must stay unambiguous (R-MODEL-1)"))
			}
			if err := tx.Q.ShareRecord(ctx, shareParams(sc, name)); err != nil {
				return err
			}
		case !on && already:
			if _, err := tx.Q.UnshareRecord(ctx, unshareParams(sc, name)); err != nil {
				return err
			}
		default:
			out = recordProto(st, "", shares[name])
			return nil
		}
		if err := tx.Changed(ctx, store.Cluster); err != nil {
			return err
		}
		if err := tx.Changed(ctx, sc.owner); err != nil {
			return err
		}
		action := "share"
		if !on {
			action = "unshare"
		}
		if err := tx.Audit(ctx, action, auditProviders, name, map[string]any{"id": store.UUIDString(st.row.ID), "tenant": tenant}); err != nil {
			return err
		}
		if shares, err = sharesOf(ctx, tx.Q); err != nil {
			return err
		}
		out = recordProto(st, "", shares[name])
		return nil
	})
	return out, err
}
