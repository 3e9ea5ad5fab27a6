package console

import (
	"maps"
	"net/http"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/rules"
	"weir.dev/web"
)

// memberEditPage is a pool member's form
// (/console/providers/{name}/members/{member}) and its off, on and remove
// buttons.
type memberEditPage struct{ *base }

// memberInputs are the member form's input names (AddPoolMemberRequest's
// and UpdatePoolMemberRequest's field paths) for a form of rows price rows.
func memberInputs(rows int) []string {
	names := []string{
		"member", "preset", "record_member", "spec.base_url", "spec.key_secret", "spec.region", "spec.weight", "spec.order",
		"spec.account", "spec.api_version", "spec.limits.rpm", "spec.limits.input_tpm", "spec.limits.output_tpm",
		"spec.limits.rpd", "spec.limits.max_in_flight", "spec.wire_format", "spec.models",
		"spec.model_map", "spec.tags", "spec.retains_data",
	}
	names = append(names, authInputs...)
	return append(names, priceInputs(rows)...)
}

// memberFormFrom reads a submitted member form (values kept as typed).
func memberFormFrom(r *http.Request) web.MemberForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return web.MemberForm{
		Member: v("member"), Preset: v("preset"), RecordMember: v("record_member"), Revision: v("expected_revision"),
		BaseURL: v("spec.base_url"), KeySecret: v("spec.key_secret"), Region: v("spec.region"),
		Weight: v("spec.weight"), Order: v("spec.order"), Account: v("spec.account"), APIVersion: v("spec.api_version"),
		RPM: v("spec.limits.rpm"), InputTPM: v("spec.limits.input_tpm"), OutputTPM: v("spec.limits.output_tpm"),
		RPD: v("spec.limits.rpd"), MaxInFlight: v("spec.limits.max_in_flight"), Wire: v("spec.wire_format"),
		Models: r.PostFormValue("spec.models"), ModelMap: r.PostFormValue("spec.model_map"), Tags: r.PostFormValue("spec.tags"),
		RetainsData: v("spec.retains_data"), Auth: authFormFrom(r), Prices: priceRowsFrom(r),
	}
}

// memberSpecOf applies the form's fields onto base (a clone of the stored
// spec when editing, empty when adding): every field the form has, the
// optional ones unset when empty (inherit from the record).
func memberSpecOf(f web.MemberForm, base *adminv1.PoolMemberSpec, local *problemSet) *adminv1.PoolMemberSpec {
	spec := &adminv1.PoolMemberSpec{}
	if base != nil {
		spec = proto.Clone(base).(*adminv1.PoolMemberSpec)
	}
	spec.BaseUrl = f.BaseURL
	spec.KeySecret, spec.Region = optString(f.KeySecret), optString(f.Region)
	spec.Account, spec.ApiVersion = optString(f.Account), optString(f.APIVersion)
	spec.Weight = local.uint32("spec.weight", f.Weight)
	spec.Order = local.uint32("spec.order", f.Order)
	l := &configv1.Limits{
		Rpm: local.int64("spec.limits.rpm", f.RPM), InputTpm: local.int64("spec.limits.input_tpm", f.InputTPM),
		OutputTpm: local.int64("spec.limits.output_tpm", f.OutputTPM),
		Rpd:       local.int64("spec.limits.rpd", f.RPD), MaxInFlight: local.int64("spec.limits.max_in_flight", f.MaxInFlight),
	}
	spec.Limits = nil
	if declaresLimits(l) {
		spec.Limits = l
	}
	spec.WireFormat = parseWire(f.Wire)
	if f.Wire != "" && spec.WireFormat == configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		local.add("spec.wire_format", "unknown wire format")
	}
	spec.Models = splitList(f.Models)
	spec.ModelMap = kvOf("spec.model_map", f.ModelMap, local)
	spec.Tags = kvOf("spec.tags", f.Tags, local)
	spec.RetainsData = optBool("spec.retains_data", f.RetainsData, local)
	spec.Auth = authOf(f.Auth, local)
	spec.Prices = pricesOf(f.Prices, local)
	return spec
}

// memberProblems shows the API's problems of a member change next to the
// form's inputs.
func memberProblems(p web.Problems, f web.MemberForm) web.Problems {
	return foldProblems(rowProblems(p), memberInputs(len(f.Prices)))
}

func recordMemberName(s string) string {
	if s == "" {
		return rules.PrimaryMember
	}
	return s
}

// show is a member's edit form, filled with the member's own values
// (the record's, which it inherits when a field is empty, as placeholders).
func (c memberEditPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderMember(w, r, s, http.StatusOK, nil)
}

func (c memberEditPage) renderMember(w http.ResponseWriter, r *http.Request, s *session, status int, form *web.MemberForm) {
	name, member := r.PathValue("name"), r.PathValue("member")
	tenant, scope := recordScope(r, s)
	d, md, err := c.loadMember(r, s, tenant, name, member)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	var f web.MemberForm
	if form != nil {
		f = *form
	} else {
		f = formOfSpec(md.GetMember().GetSpec())
		f.Revision = strconv.FormatUint(d.GetRecord().GetRevision(), 10)
		f.Prices = padPrices(f.Prices)
	}
	f.CSRF, f.Scope, f.Edit, f.Record, f.Member = s.csrf, scope, true, name, member
	f.Action = web.MemberHref(name, member, scope, "")
	inheritInto(&f, d.GetRecord().GetSpec())
	c.page(w, r, s, status, "Edit member "+member, "providers", web.MemberEditPage(web.MemberEditView{Record: name, Scope: scope, Member: member, Form: f}))
}

// loadMember reads a record and one of its members (NotFound when the
// record is plain or has no such member).
func (c memberEditPage) loadMember(r *http.Request, s *session, tenant, name, member string) (*adminv1.ProviderDetail, *adminv1.MemberDetail, error) {
	resp, err := s.api.Providers.GetProvider(r.Context(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: tenant, Name: name}))
	if err != nil {
		return nil, nil, err
	}
	d := resp.Msg.GetDetail()
	if d.GetRecord().GetKind() == adminv1.RecordKind_RECORD_KIND_POOL {
		for _, md := range d.GetMembers() {
			if md.GetMember().GetName() == member {
				return d, md, nil
			}
		}
	}
	return nil, nil, connect.NewError(connect.CodeNotFound, errNoMember(name, member))
}

type noMemberError struct{ record, member string }

func (e noMemberError) Error() string {
	return "record " + strconv.Quote(e.record) + " has no member " + strconv.Quote(e.member)
}

func errNoMember(record, member string) error { return noMemberError{record, member} }

func formOfSpec(sp *adminv1.PoolMemberSpec) web.MemberForm {
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	return web.MemberForm{
		BaseURL: sp.GetBaseUrl(), KeySecret: sp.GetKeySecret(), Region: sp.GetRegion(), Account: sp.GetAccount(), APIVersion: sp.GetApiVersion(),
		Weight: num(int64(sp.GetWeight())), Order: num(int64(sp.GetOrder())),
		RPM: num(sp.GetLimits().GetRpm()), InputTPM: num(sp.GetLimits().GetInputTpm()), OutputTPM: num(sp.GetLimits().GetOutputTpm()),
		RPD: num(sp.GetLimits().GetRpd()), MaxInFlight: num(sp.GetLimits().GetMaxInFlight()), Wire: words.WireFormat(sp.GetWireFormat()),
		Models: strings.Join(sp.GetModels(), "\n"), ModelMap: kvText(sp.GetModelMap()), Tags: kvText(sp.GetTags()),
		RetainsData: optBoolText(sp.RetainsData), Auth: authFormOf(sp.GetAuth()), Prices: priceRowsOf(sp.GetPrices()),
	}
}

// updateMember saves a member's edit form: the fields that differ from the
// stored member, as an update mask, with the revision the form was read
// at (a concurrent change is refused, not overwritten). The API is asked
// first with validate_only (preview.go): "Preview changes" shows what would
// change; a save stops at the API's problems and at R-SEC-4 warnings naming
// the member, with "Save anyway".
func (c memberEditPage) updateMember(w http.ResponseWriter, r *http.Request, s *session) {
	name, member := r.PathValue("name"), r.PathValue("member")
	tenant, scope := recordScope(r, s)
	f := memberFormFrom(r)
	_, md, err := c.loadMember(r, s, tenant, name, member)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	var local problemSet
	stored := md.GetMember().GetSpec()
	if stored == nil {
		stored = &adminv1.PoolMemberSpec{}
	}
	spec := memberSpecOf(f, stored, &local)
	if local.any() {
		f.Problems = local.problems()
		c.renderMemberForm(w, r, s, http.StatusUnprocessableEntity, f)
		return
	}
	paths := changedPaths(stored, spec)
	if len(paths) == 0 {
		if asksPreview(r) {
			f.Preview = &web.Preview{}
			c.renderMemberForm(w, r, s, http.StatusOK, f)
			return
		}
		c.redirect(w, r, web.ProviderHref(name, scope), web.Flash{Kind: web.FlashInfo, Text: "Member " + member + ": nothing changed."})
		return
	}
	req := &adminv1.UpdatePoolMemberRequest{
		Tenant: tenant, Record: name, Member: member, Spec: spec,
		UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}, ExpectedRevision: parseRevision(f.Revision),
	}
	if asksPreview(r) || !confirmed(r) {
		req.ValidateOnly = true
		resp, err := s.api.Pools.UpdatePoolMember(r.Context(), connect.NewRequest(req))
		if err != nil {
			c.memberRefused(w, r, s, f, err)
			return
		}
		if rv := reviewOf(resp.Msg, asksPreview(r), sec4Naming(member)); rv.stop() {
			f.Problems, f.Warnings, f.Preview = memberProblems(rv.problems, f), rv.warnings, rv.preview
			c.renderMemberForm(w, r, s, rv.status(), f)
			return
		}
		req.ValidateOnly = false
	}
	resp, err := s.api.Pools.UpdatePoolMember(r.Context(), connect.NewRequest(req))
	if err != nil {
		c.memberRefused(w, r, s, f, err)
		return
	}
	flashes := append([]web.Flash{{Kind: web.FlashOK, Text: "Member " + member + " saved (" + strings.Join(paths, ", ") + ")."}},
		warningFlashes(resp.Msg.GetWarnings())...)
	c.redirect(w, r, web.ProviderHref(name, scope), flashes...)
}

// memberRefused shows a member's edit form again with the API's refusal.
func (c memberEditPage) memberRefused(w http.ResponseWriter, r *http.Request, s *session, f web.MemberForm, err error) {
	p, status, shown := c.editRefusal(w, r, s, err)
	if shown {
		return
	}
	f.Problems = memberProblems(p, f)
	c.renderMemberForm(w, r, s, status, f)
}

// renderMemberForm shows a member's edit form again as submitted (values
// kept; its price rows padded with blank ones).
func (c memberEditPage) renderMemberForm(w http.ResponseWriter, r *http.Request, s *session, status int, f web.MemberForm) {
	f.Prices = padPrices(f.Prices)
	c.renderMember(w, r, s, status, &f)
}

// changedPaths are the update mask paths of the form's fields whose value
// differs between the stored spec and the edited one.
func changedPaths(a, b *adminv1.PoolMemberSpec) []string {
	var out []string
	add := func(path string, changed bool) {
		if changed {
			out = append(out, path)
		}
	}
	optEq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	add("base_url", a.GetBaseUrl() != b.GetBaseUrl())
	add("key_secret", !optEq(a.KeySecret, b.KeySecret))
	add("region", !optEq(a.Region, b.Region))
	add("weight", max(a.GetWeight(), 1) != max(b.GetWeight(), 1))
	add("order", max(a.GetOrder(), 1) != max(b.GetOrder(), 1))
	add("account", !optEq(a.Account, b.Account))
	add("api_version", !optEq(a.ApiVersion, b.ApiVersion))
	add("limits.rpm", a.GetLimits().GetRpm() != b.GetLimits().GetRpm())
	add("limits.input_tpm", a.GetLimits().GetInputTpm() != b.GetLimits().GetInputTpm())
	add("limits.output_tpm", a.GetLimits().GetOutputTpm() != b.GetLimits().GetOutputTpm())
	add("limits.rpd", a.GetLimits().GetRpd() != b.GetLimits().GetRpd())
	add("limits.max_in_flight", a.GetLimits().GetMaxInFlight() != b.GetLimits().GetMaxInFlight())
	add("wire_format", a.GetWireFormat() != b.GetWireFormat())
	add("models", strings.Join(a.GetModels(), "\n") != strings.Join(b.GetModels(), "\n"))
	add("model_map", !maps.Equal(a.GetModelMap(), b.GetModelMap()))
	add("tags", !maps.Equal(a.GetTags(), b.GetTags()))
	add("retains_data", !optBoolEq(a.RetainsData, b.RetainsData))
	add("auth", !proto.Equal(authOrNil(a.GetAuth()), authOrNil(b.GetAuth())))
	add("prices", !pricesEqual(a.GetPrices(), b.GetPrices()))
	return out
}

// memberOff and memberOn switch a member off (out of every call, R-ELIG-1)
// and on again.
func (c memberEditPage) memberOff(w http.ResponseWriter, r *http.Request, s *session) {
	c.switchMember(w, r, s, true)
}
func (c memberEditPage) memberOn(w http.ResponseWriter, r *http.Request, s *session) {
	c.switchMember(w, r, s, false)
}

func (c memberEditPage) switchMember(w http.ResponseWriter, r *http.Request, s *session, off bool) {
	name, member := r.PathValue("name"), r.PathValue("member")
	tenant, scope := recordScope(r, s)
	resp, err := s.api.Pools.UpdatePoolMember(r.Context(), connect.NewRequest(&adminv1.UpdatePoolMemberRequest{
		Tenant: tenant, Record: name, Member: member, Spec: &adminv1.PoolMemberSpec{Off: off},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"off"}},
	}))
	state := "on"
	if off {
		state = "off"
	}
	if err != nil {
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			c.fail(w, r, s, err)
			return
		}
		p, _ := problemsOf(err)
		c.redirect(w, r, web.ProviderHref(name, scope), web.Flash{Kind: web.FlashError, Text: "Member " + member + " was not turned " + state + ": " + p.Message})
		return
	}
	flashes := append([]web.Flash{{Kind: web.FlashOK, Text: "Member " + member + " turned " + state + "."}}, warningFlashes(resp.Msg.GetWarnings())...)
	c.redirect(w, r, web.ProviderHref(name, scope), flashes...)
}

// removeMember removes a member (the last one turns the record plain).
func (c memberEditPage) removeMember(w http.ResponseWriter, r *http.Request, s *session) {
	name, member := r.PathValue("name"), r.PathValue("member")
	tenant, scope := recordScope(r, s)
	resp, err := s.api.Pools.RemovePoolMember(r.Context(), connect.NewRequest(&adminv1.RemovePoolMemberRequest{
		Tenant: tenant, Record: name, Member: member,
	}))
	if err != nil {
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			c.fail(w, r, s, err)
			return
		}
		p, _ := problemsOf(err)
		c.redirect(w, r, web.ProviderHref(name, scope), web.Flash{Kind: web.FlashError, Text: "Member " + member + " was not removed: " + p.Message})
		return
	}
	text := "Member " + member + " removed from " + name + "."
	if resp.Msg.GetRecordPlain() {
		text += " It was the last one: " + name + " is a plain record again."
	}
	flashes := append([]web.Flash{{Kind: web.FlashOK, Text: text}}, warningFlashes(resp.Msg.GetWarnings())...)
	c.redirect(w, r, web.ProviderHref(name, scope), flashes...)
}
