package console

import (
	"net/http"
	"slices"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/provider"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// R-SEC-4 warnings before saving.
//
// The admin API has no validate-only mode: its changes return their
// warnings once saved. So that the console can show R-SEC-4 warnings
// (members sharing a key secret or a host) before a change is saved, it
// builds the record the change would produce from what the API returned
// (GetProvider's record and members, or the create request itself) and asks
// provider.Warnings, the same pure function the API uses, for its
// warnings. Only R-SEC-4's codes are previewed (the others need the
// owner's secrets and data rules, which the API checks and returns after
// saving); and only those naming a member the change adds or edits, so
// that a record already warned about does not ask again for every change.
// The preview is advice: the API's own answer after saving is shown too.

// sec4Codes are the warning codes of R-SEC-4.
var sec4Codes = []string{provider.WarnSharedKeySecret, provider.WarnSharedHost}

// previewCreate returns the R-SEC-4 warnings of the record a create request
// would produce.
func previewCreate(req *adminv1.CreateProviderRequest, managed bool) []web.Warning {
	spec := proto.Clone(orEmptySpec(req.GetSpec())).(*adminv1.ProviderSpec)
	pool := len(req.GetMembers()) > 0
	if req.GetPreset() != adminv1.Preset_PRESET_UNSPECIFIED {
		if s, err := provider.ResolveRecordPreset(req.GetPreset(), spec, pool, provider.GivenBySpec(spec), "preset"); err == nil && s != nil {
			spec = s
		}
	}
	rec := &provider.Record{Name: req.GetName(), Managed: managed, Pool: pool, Spec: spec}
	var names []string
	for _, m := range req.GetMembers() {
		ms := proto.Clone(orEmptyMember(m.GetSpec())).(*adminv1.PoolMemberSpec)
		rec.Members = append(rec.Members, &provider.Member{Name: m.GetName(), Spec: ms})
		names = append(names, m.GetName())
	}
	return sec4(rec, names)
}

// previewAdd returns the R-SEC-4 warnings the record would have with the
// member of req added (NotFound: the record does not exist yet, and the
// API creates it with that one member, which warns of nothing).
func previewAdd(r *http.Request, s *session, tenant string, req *adminv1.AddPoolMemberRequest) ([]web.Warning, error) {
	resp, err := s.api.Providers.GetProvider(r.Context(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: tenant, Name: req.GetRecord()}))
	if err != nil {
		return nil, err
	}
	return previewMember(resp.Msg.GetDetail(), req.GetMember(), req.GetPreset(), req.GetSpec(), false, req.GetRecordMember()), nil
}

// previewMember returns the R-SEC-4 warnings of record d with member added
// (edit false; a plain record's endpoint becoming member recordMember) or
// replaced by spec (edit true).
func previewMember(d *adminv1.ProviderDetail, member string, preset adminv1.Preset, spec *adminv1.PoolMemberSpec, edit bool, recordMember string) []web.Warning {
	rs := proto.Clone(orEmptySpec(d.GetRecord().GetSpec())).(*adminv1.ProviderSpec)
	rec := &provider.Record{Name: d.GetRecord().GetName(), Managed: d.GetRecord().GetManaged(), Pool: true, Spec: rs}
	names := []string{member}
	if d.GetRecord().GetKind() != adminv1.RecordKind_RECORD_KIND_POOL {
		// The plain record's endpoint becomes a member (base_url and
		// limits), inheriting the rest.
		ep := &adminv1.PoolMemberSpec{BaseUrl: rs.GetBaseUrl(), Limits: rs.GetLimits()}
		rec.Members = append(rec.Members, &provider.Member{Name: recordMemberName(recordMember), Spec: ep})
		rs.BaseUrl, rs.Limits = "", nil
	} else {
		for _, md := range d.GetMembers() {
			if edit && md.GetMember().GetName() == member {
				continue
			}
			rec.Members = append(rec.Members, &provider.Member{Name: md.GetMember().GetName(), Spec: orEmptyMember(md.GetMember().GetSpec())})
		}
	}
	ms := proto.Clone(orEmptyMember(spec)).(*adminv1.PoolMemberSpec)
	if preset != adminv1.Preset_PRESET_UNSPECIFIED {
		if resolved, err := provider.ResolveMemberPreset(preset, rs, ms, provider.GivenBySpec(ms), "preset"); err == nil && resolved != nil {
			ms = resolved
		}
	}
	rec.Members = append(rec.Members, &provider.Member{Name: member, Spec: ms})
	return sec4(rec, names)
}

// sec4 returns rec's R-SEC-4 warnings that name one of members.
func sec4(rec *provider.Record, members []string) []web.Warning {
	var out []web.Warning
	for _, w := range provider.Warnings(rec, provider.Env{}) {
		if !slices.Contains(sec4Codes, w.GetCode()) {
			continue
		}
		if !slices.ContainsFunc(w.GetMembers(), func(m string) bool { return slices.Contains(members, m) }) {
			continue
		}
		out = append(out, web.Warning{Code: w.GetCode(), Message: w.GetMessage(), Members: w.GetMembers()})
	}
	return out
}

func orEmptySpec(s *adminv1.ProviderSpec) *adminv1.ProviderSpec {
	if s == nil {
		return &adminv1.ProviderSpec{}
	}
	return s
}

func orEmptyMember(s *adminv1.PoolMemberSpec) *adminv1.PoolMemberSpec {
	if s == nil {
		return &adminv1.PoolMemberSpec{}
	}
	return s
}
