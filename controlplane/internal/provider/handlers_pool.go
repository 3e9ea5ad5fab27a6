package provider

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/rules"
)

// errPlain is the answer to a member operation on a plain record.
func errPlain(record string) error {
	return connect.NewError(connect.CodeFailedPrecondition, errors.New("record "+quote(record)+" is plain: its endpoint is the record's own (change it with UpdateProvider); add a member to make it a pool"))
}

func errMemberExists(record, member string) error {
	return connect.NewError(connect.CodeAlreadyExists, errors.New("record "+quote(record)+" already has a member named "+quote(member)))
}

// AddPoolMember implements adminv1connect.PoolServiceHandler. See
// addMember for what it does to the record.
func (s *Service) AddPoolMember(ctx context.Context, req *connect.Request[adminv1.AddPoolMemberRequest]) (*connect.Response[adminv1.AddPoolMemberResponse], error) {
	m := req.Msg
	out := &adminv1.AddPoolMemberResponse{}
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		before, found, err := loadRecord(ctx, tx.Q, sc.owner, m.GetRecord(), true)
		if err != nil {
			return err
		}
		if found {
			if err := checkRevision(before, m.GetExpectedRevision()); err != nil {
				return err
			}
		} else {
			before = nil
		}
		rec, earlier, err := addMember(before, m, sc)
		if err != nil {
			return err
		}
		var check func() error
		if before == nil {
			check = func() error { return nameTaken(ctx, tx, sc, rec.Name) }
		}
		o, err := s.commit(ctx, tx, sc, before, rec, earlier, check, m.GetValidateOnly())
		if err != nil {
			return err
		}
		out.RecordCreated = before == nil
		out.RecordConverted = before != nil && !before.rec.Pool
		details := map[string]any{"record_created": out.RecordCreated, "record_converted": out.RecordConverted, "preset": PresetName(m.GetPreset())}
		if out.RecordConverted {
			details["record_member"] = recordMemberName(m.GetRecordMember())
		}
		if o.saved {
			if err := tx.Audit(ctx, "add", auditMembers(rec.Name), m.GetMember(), details); err != nil {
				return err
			}
		}
		out.Record = recordProto(o.st, sc.tenant, nil)
		out.Member = memberDetail(o.st, o.st.rec.member(m.GetMember()), nil)
		out.Warnings, out.Problems, out.Changes = o.warnings, o.problems, o.changes
		return nil
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PoolServiceAddPoolMemberProcedure, err)
	}
	return connect.NewResponse(out), nil
}

func recordMemberName(s string) string {
	if s == "" {
		return rules.PrimaryMember
	}
	return s
}

// addMember returns the record an AddPoolMemberRequest produces from the
// stored one (nil: the record does not exist) and the request's problems
// found so far; a non-nil error is a refusal of another kind (AlreadyExists,
// PermissionDenied):
//   - no record: a pool is created from record_spec, which must not have a
//     base_url, with the preset applied to the record (the member inherits);
//   - a plain record: its endpoint (base_url and limits) becomes a member
//     named record_member ("primary" when empty) and the record a pool;
//     then the member is added with the preset applied to it;
//   - a pool: the member is added with the preset applied to it.
func addMember(before *stored, m *adminv1.AddPoolMemberRequest, sc scope) (*Record, error, error) {
	var ps problems
	reqSpec := m.GetSpec()
	if reqSpec == nil {
		reqSpec = &adminv1.PoolMemberSpec{}
	}
	member := &Member{Name: m.GetMember(), namePath: "member", specPath: "spec"}
	var rec *Record
	if before == nil {
		rs := m.GetRecordSpec()
		if rs == nil {
			rs = &adminv1.ProviderSpec{}
		}
		if rs.GetBaseUrl() != "" {
			ps.add("record_spec.base_url", CodeNotAllowed, "must be empty: the record is created as a pool, and each member has its own base_url")
		}
		if rs.GetInternal() && !sc.principal.IsClusterAdmin() {
			return nil, nil, errInternalFlag
		}
		spec, err := ResolveRecordPreset(m.GetPreset(), rs, true, GivenBySpec(rs), "preset")
		ps.merge(err)
		spec.BaseUrl = ""
		normalizeRecord(spec)
		rec = &Record{
			Name: m.GetRecord(), Managed: sc.managed(), Pool: true, Spec: spec, preset: PresetName(m.GetPreset()),
			namePath: "record", specPath: "record_spec", membersPath: "member",
		}
		member.Spec = cloneMemberSpec(reqSpec)
	} else {
		if rs := m.GetRecordSpec(); rs != nil && !proto.Equal(rs, &adminv1.ProviderSpec{}) {
			ps.add("record_spec", CodeNotAllowed, "must be empty: record %s exists (change it with UpdateProvider)", quote(m.GetRecord()))
		}
		rec = before.rec.clone()
		rec.namePath, rec.specPath, rec.membersPath = "record", "record", "member"
		if !rec.Pool {
			name := recordMemberName(m.GetRecordMember())
			if name == m.GetMember() {
				return nil, nil, errMemberExists(rec.Name, name)
			}
			rec.Members = []*Member{plainEndpoint(rec, name)}
			rec.Spec.BaseUrl, rec.Spec.Limits, rec.Pool = "", nil, true
		}
		if rec.member(m.GetMember()) != nil {
			return nil, nil, errMemberExists(rec.Name, m.GetMember())
		}
		spec, err := ResolveMemberPreset(m.GetPreset(), rec.Spec, reqSpec, GivenBySpec(reqSpec), "preset")
		ps.merge(err)
		member.Spec, member.preset = spec, PresetName(m.GetPreset())
	}
	normalizeMember(rec.Spec, member.Spec)
	rec.Members = append(rec.Members, member)
	return rec, ps.err(), nil
}

// plainEndpoint is the member a plain record's own endpoint becomes when
// the record turns into a pool: its base_url and limits; everything else it
// inherits from the record.
func plainEndpoint(rec *Record, name string) *Member {
	ms := &adminv1.PoolMemberSpec{BaseUrl: rec.Spec.GetBaseUrl(), Weight: 1, Order: 1}
	if declaresLimits(rec.Spec.GetLimits()) {
		ms.Limits = proto.Clone(rec.Spec.GetLimits()).(*configv1.Limits)
	}
	return &Member{Name: name, Spec: ms, namePath: "record_member"}
}

// UpdatePoolMember implements adminv1connect.PoolServiceHandler.
func (s *Service) UpdatePoolMember(ctx context.Context, req *connect.Request[adminv1.UpdatePoolMemberRequest]) (*connect.Response[adminv1.UpdatePoolMemberResponse], error) {
	m := req.Msg
	out := &adminv1.UpdatePoolMemberResponse{}
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		before, found, err := loadRecord(ctx, tx.Q, sc.owner, m.GetRecord(), true)
		if err != nil {
			return err
		}
		if !found {
			return errRecordNotFound(m.GetRecord())
		}
		if err := checkRevision(before, m.GetExpectedRevision()); err != nil {
			return err
		}
		if !before.rec.Pool {
			return errPlain(m.GetRecord())
		}
		if before.rec.member(m.GetMember()) == nil {
			return errMemberNotFound(m.GetRecord(), m.GetMember())
		}
		rec, earlier := updateMember(before.rec, m)
		o, err := s.commit(ctx, tx, sc, before, rec, earlier, nil, m.GetValidateOnly())
		if err != nil {
			return err
		}
		if o.saved {
			if err := tx.Audit(ctx, memberUpdateAction(m), auditMembers(rec.Name), m.GetMember(), map[string]any{
				"paths": m.GetUpdateMask().GetPaths(), "preset": PresetName(m.GetPreset()),
			}); err != nil {
				return err
			}
		}
		out.Record = recordProto(o.st, sc.tenant, nil)
		out.Member = memberDetail(o.st, o.st.rec.member(m.GetMember()), nil)
		out.Warnings, out.Problems, out.Changes = o.warnings, o.problems, o.changes
		return nil
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PoolServiceUpdatePoolMemberProcedure, err)
	}
	return connect.NewResponse(out), nil
}

// memberUpdateAction is the audit action of an UpdatePoolMemberRequest:
// "off" or "on" when it only switches the member, else "update".
func memberUpdateAction(m *adminv1.UpdatePoolMemberRequest) string {
	if paths := m.GetUpdateMask().GetPaths(); len(paths) == 1 && paths[0] == "off" && m.GetPreset() == adminv1.Preset_PRESET_UNSPECIFIED {
		if m.GetSpec().GetOff() {
			return "off"
		}
		return "on"
	}
	return "update"
}

// updateMember applies an UpdatePoolMemberRequest to the member of a stored
// pool: the mask's paths from the request's spec, then the preset (when
// given) on every field it determines that the mask does not name, then the
// server's defaults.
func updateMember(stored *Record, m *adminv1.UpdatePoolMemberRequest) (*Record, error) {
	var ps problems
	rec := stored.clone()
	rec.namePath, rec.specPath = "record", "record"
	mem := rec.member(m.GetMember())
	mem.namePath, mem.specPath = "member", "spec"
	paths := m.GetUpdateMask().GetPaths()
	if len(paths) == 0 && m.GetPreset() == adminv1.Preset_PRESET_UNSPECIFIED {
		ps.add("update_mask", CodeRequired, "missing: name the fields to change (or give a preset)")
	}
	reqSpec := m.GetSpec()
	if reqSpec == nil {
		reqSpec = &adminv1.PoolMemberSpec{}
	}
	ps.merge(applyMask(mem.Spec, reqSpec, paths, memberNested, "update_mask"))
	if m.GetPreset() != adminv1.Preset_PRESET_UNSPECIFIED {
		spec, err := ResolveMemberPreset(m.GetPreset(), rec.Spec, mem.Spec, GivenByMask(paths), "preset")
		ps.merge(err)
		mem.Spec, mem.preset = spec, PresetName(m.GetPreset())
	}
	normalizeMember(rec.Spec, mem.Spec)
	return rec, ps.err()
}

// RemovePoolMember implements adminv1connect.PoolServiceHandler.
func (s *Service) RemovePoolMember(ctx context.Context, req *connect.Request[adminv1.RemovePoolMemberRequest]) (*connect.Response[adminv1.RemovePoolMemberResponse], error) {
	m := req.Msg
	out := &adminv1.RemovePoolMemberResponse{}
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		before, found, err := loadRecord(ctx, tx.Q, sc.owner, m.GetRecord(), true)
		if err != nil {
			return err
		}
		if !found {
			return errRecordNotFound(m.GetRecord())
		}
		if err := checkRevision(before, m.GetExpectedRevision()); err != nil {
			return err
		}
		if !before.rec.Pool {
			return errPlain(m.GetRecord())
		}
		rec, err := removeMember(before.rec, m.GetMember())
		if err != nil {
			return err
		}
		o, err := s.commit(ctx, tx, sc, before, rec, nil, nil, m.GetValidateOnly())
		if err != nil {
			return err
		}
		out.RecordPlain = !rec.Pool
		if o.saved {
			if err := tx.Audit(ctx, "remove", auditMembers(rec.Name), m.GetMember(), map[string]any{
				"id": store.UUIDString(before.members[m.GetMember()].ID), "record_plain": out.RecordPlain,
			}); err != nil {
				return err
			}
		}
		out.Record, out.Warnings, out.Problems, out.Changes = recordProto(o.st, sc.tenant, nil), o.warnings, o.problems, o.changes
		return nil
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PoolServiceRemovePoolMemberProcedure, err)
	}
	return connect.NewResponse(out), nil
}

// removeMember returns the stored pool without the named member. Removing
// the last member turns the record plain again with what that member set
// of its own (see makePlain); a last member with a model map, or one that
// is off, cannot be removed (FailedPrecondition): a plain record has no
// model map and cannot be off, and silently switching a record back on is
// not what removing an off member means.
func removeMember(stored *Record, name string) (*Record, error) {
	rec := stored.clone()
	rec.namePath, rec.specPath = "record", "record"
	mem := rec.member(name)
	if mem == nil {
		return nil, errMemberNotFound(rec.Name, name)
	}
	rec.Members = deleteMember(rec.Members, name)
	if len(rec.Members) > 0 {
		return rec, nil
	}
	if len(mem.Spec.GetModelMap()) > 0 {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s is the last member of %s and has a model map, which a plain record cannot have: clear the map first", quote(name), quote(rec.Name)))
	}
	if mem.Spec.GetOff() {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s is the last member of %s and is off, which a plain record cannot be: switch it on first, or delete the record", quote(name), quote(rec.Name)))
	}
	makePlain(rec, mem)
	return rec, nil
}

func deleteMember(ms []*Member, name string) []*Member {
	var out []*Member
	for _, m := range ms {
		if m.Name != name {
			out = append(out, m)
		}
	}
	return out
}

// makePlain turns a pool whose last member m was just removed into a plain
// record: m's base_url and limits become the record's, and every
// inheritable field m set of its own (auth, key_secret, region,
// retains_data, tags, prices, account, api_version) is written onto the
// record; a models subset becomes the record's models (and prices of the
// models it drops go). Prices merge per model and part, m's parts winning
// (R-COST-4). It changes rec in place.
func makePlain(rec *Record, m *Member) {
	s, ms := rec.Spec, m.Spec
	rec.Pool, rec.Members = false, nil
	s.BaseUrl = ms.GetBaseUrl()
	if declaresLimits(ms.GetLimits()) {
		s.Limits = proto.Clone(ms.GetLimits()).(*configv1.Limits)
	}
	if memberHasOwnAuth(ms.GetAuth()) {
		s.Auth = cloneAuth(ms.GetAuth())
	}
	if ms.KeySecret != nil {
		s.KeySecret = ms.GetKeySecret()
	}
	if ms.Region != nil {
		s.Region = ms.GetRegion()
	}
	if ms.RetainsData != nil {
		s.RetainsData = ms.GetRetainsData()
	}
	if ms.Account != nil {
		s.Account = ms.GetAccount()
	}
	if ms.ApiVersion != nil {
		s.ApiVersion = ms.GetApiVersion()
	}
	if len(ms.GetTags()) > 0 {
		if s.Tags == nil {
			s.Tags = map[string]string{}
		}
		for k, v := range ms.GetTags() {
			s.Tags[k] = v
		}
	}
	if len(ms.GetModels()) > 0 {
		keep := map[string]bool{}
		for _, name := range ms.GetModels() {
			keep[name] = true
		}
		var models []*configv1.Model
		for _, md := range s.GetModels() {
			if keep[md.GetName()] {
				models = append(models, md)
			}
		}
		s.Models = models
		var prices []*configv1.Price
		for _, p := range s.GetPrices() {
			if keep[p.GetModel()] {
				prices = append(prices, p)
			}
		}
		s.Prices = prices
	}
	for _, own := range ms.GetPrices() {
		merged := mergePrice(findPrice(s.GetPrices(), own.GetModel()), own)
		if i := indexPrice(s.GetPrices(), own.GetModel()); i >= 0 {
			s.Prices[i] = merged
		} else {
			s.Prices = append(s.Prices, merged)
		}
	}
}

func indexPrice(ps []*configv1.Price, model string) int {
	for i, p := range ps {
		if p.GetModel() == model {
			return i
		}
	}
	return -1
}

// ListPoolMembers implements adminv1connect.PoolServiceHandler. It lists
// what GetProvider shows of the members, a page at a time.
func (s *Service) ListPoolMembers(ctx context.Context, req *connect.Request[adminv1.ListPoolMembersRequest]) (*connect.Response[adminv1.ListPoolMembersResponse], error) {
	m := req.Msg
	detail, err := s.getDetail(ctx, m.GetTenant(), m.GetRecord())
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PoolServiceListPoolMembersProcedure, err)
	}
	page, next, err := paginate(detail.GetMembers(), m.GetPageSize(), m.GetPageToken())
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PoolServiceListPoolMembersProcedure, err)
	}
	return connect.NewResponse(&adminv1.ListPoolMembersResponse{Members: page, NextPageToken: next}), nil
}

// ResetPoolMember implements adminv1connect.PoolServiceHandler: it records
// the reset in the audit log and hands a ResetMember command to the
// Resetter (R-OBS-4), in the request's transaction, so that a command that
// cannot be sent leaves no audit entry. It changes no configuration.
func (s *Service) ResetPoolMember(ctx context.Context, req *connect.Request[adminv1.ResetPoolMemberRequest]) (*connect.Response[adminv1.ResetPoolMemberResponse], error) {
	m := req.Msg
	out := &adminv1.ResetPoolMemberResponse{}
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		st, found, err := loadRecord(ctx, tx.Q, sc.owner, m.GetRecord(), false)
		if err != nil {
			return err
		}
		if !found {
			return errRecordNotFound(m.GetRecord())
		}
		if (st.rec.Pool && st.rec.member(m.GetMember()) == nil) || (!st.rec.Pool && m.GetMember() != rules.PrimaryMember) {
			return errMemberNotFound(m.GetRecord(), m.GetMember())
		}
		id, err := newID()
		if err != nil {
			return err
		}
		now := timestamppb.New(s.now())
		cmd := &telemetryv1.Command{
			Id: id,
			Command: &telemetryv1.Command_ResetMember{ResetMember: &telemetryv1.ResetMember{
				TenantId: store.UUIDString(sc.owner), RecordId: store.UUIDString(st.row.ID), MemberName: m.GetMember(),
			}},
			IssuedAt: now,
		}
		tx.SetAuditTenant(sc.owner)
		delivered := s.resetter != nil
		if err := tx.Audit(ctx, "reset", auditMembers(m.GetRecord()), m.GetMember(), map[string]any{
			"command_id": id, "delivered": delivered,
		}); err != nil {
			return err
		}
		if delivered {
			if err := s.resetter.ResetMember(ctx, cmd); err != nil {
				s.log.ErrorContext(ctx, "provider service: reset not sent", "record", m.GetRecord(), "member", m.GetMember(), "err", err)
				return connect.NewError(connect.CodeUnavailable, errors.New("the reset could not be sent to the edges; try again"))
			}
		}
		out.CommandId, out.IssuedAt = id, now
		return nil
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PoolServiceResetPoolMemberProcedure, err)
	}
	return connect.NewResponse(out), nil
}

// newID returns a random UUID (version 4) in text form.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("command id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
