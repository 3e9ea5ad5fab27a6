package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// providerPage is a record's page (/console/providers/{name}): its settings,
// warnings and members, the add-member form, deletion and, for managed
// records, sharing.
type providerPage struct{ *base }

// show is a record's page: settings, warnings, members and the add
// form.
func (c providerPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderProvider(w, r, s, http.StatusOK, nil)
}

// renderProvider renders a record's page; add, when not nil, is the add
// form as submitted (values kept, problems or warnings shown).
func (c providerPage) renderProvider(w http.ResponseWriter, r *http.Request, s *session, status int, add *web.MemberForm) {
	name := r.PathValue("name")
	tenant, scope := recordScope(r, s)
	resp, err := s.api.Providers.GetProvider(r.Context(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: tenant, Name: name}))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	d := resp.Msg.GetDetail()
	rec := d.GetRecord()
	v := web.ProviderDetailView{
		CSRF: s.csrf, Scope: scope, Name: rec.GetName(), Kind: kindName(rec.GetKind()),
		Preset: words.Preset(rec.GetPreset()), Wire: words.WireFormat(rec.GetSpec().GetWireFormat()),
		ReadOnly: (rec.GetManaged() && scope == "") || !canChange(s, tenant), Revision: rec.GetRevision(),
		Settings: recordSettings(rec, s.cluster), Warnings: webWarnings(d.GetWarnings()),
		RoutingSummary: d.GetRoutingSummary(),
	}
	for _, md := range d.GetMembers() {
		v.Members = append(v.Members, memberRow(md, rec.GetKind() != adminv1.RecordKind_RECORD_KIND_POOL))
	}
	if add != nil {
		v.Add = *add
	} else {
		v.Add = web.MemberForm{Prices: padPrices(nil)}
	}
	v.Add.CSRF, v.Add.Scope, v.Add.Record = s.csrf, scope, rec.GetName()
	v.Add.Action = withScopeQuery("/console/providers/"+pathEscape(rec.GetName())+"/members", scope)
	v.Add.ShowRecordMember = rec.GetKind() != adminv1.RecordKind_RECORD_KIND_POOL
	inheritInto(&v.Add, rec.GetSpec())
	if s.cluster && rec.GetManaged() && scope == web.ScopeManaged {
		v.CanShare, v.SharedWith = true, rec.GetSharedWith()
		for _, t := range s.tenants {
			if !slices.Contains(v.SharedWith, t) {
				v.ShareWith = append(v.ShareWith, web.Option{Value: t, Label: t})
			}
		}
	}
	c.page(w, r, s, status, rec.GetName(), "providers", web.ProviderDetailPage(v))
}

// addMember adds a member to a record (a plain record becomes a pool). The
// API is asked first with validate_only (preview.go): "Preview changes"
// shows what would change; an add stops at the API's problems and at
// R-SEC-4 warnings naming the new member, with "Save anyway". The API's
// warnings after saving come as flashes.
func (c providerPage) addMember(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	tenant, scope := recordScope(r, s)
	f := memberFormFrom(r)
	var local problemSet
	preset := parsePreset(f.Preset)
	if f.Preset != "" && preset == adminv1.Preset_PRESET_UNSPECIFIED {
		local.add("preset", "unknown preset")
	}
	spec := memberSpecOf(f, nil, &local)
	if local.any() {
		f.Problems = local.problems()
		c.renderAdd(w, r, s, http.StatusUnprocessableEntity, f)
		return
	}
	req := &adminv1.AddPoolMemberRequest{Tenant: tenant, Record: name, Member: f.Member, Preset: preset, Spec: spec, RecordMember: f.RecordMember}
	if asksPreview(r) || !confirmed(r) {
		req.ValidateOnly = true
		resp, err := s.api.Pools.AddPoolMember(r.Context(), connect.NewRequest(req))
		if err != nil {
			c.addRefused(w, r, s, f, err)
			return
		}
		if rv := reviewOf(resp.Msg, asksPreview(r), sec4Naming(f.Member)); rv.stop() {
			f.Problems, f.Warnings, f.Preview = memberProblems(rv.problems, f), rv.warnings, rv.preview
			c.renderAdd(w, r, s, rv.status(), f)
			return
		}
		req.ValidateOnly = false
	}
	resp, err := s.api.Pools.AddPoolMember(r.Context(), connect.NewRequest(req))
	if err != nil {
		c.addRefused(w, r, s, f, err)
		return
	}
	text := "Member " + f.Member + " added to " + name + "."
	if resp.Msg.GetRecordConverted() {
		text += " The record is a pool now; its own endpoint became member " + recordMemberName(f.RecordMember) + "."
	}
	flashes := append([]web.Flash{{Kind: web.FlashOK, Text: text}}, warningFlashes(resp.Msg.GetWarnings())...)
	c.redirect(w, r, web.ProviderHref(name, scope), flashes...)
}

// renderAdd shows a record's page again with the add form as submitted
// (values kept; its price rows padded with blank ones).
func (c providerPage) renderAdd(w http.ResponseWriter, r *http.Request, s *session, status int, f web.MemberForm) {
	f.Prices = padPrices(f.Prices)
	c.renderProvider(w, r, s, status, &f)
}

// addRefused shows a record's page again with the add form and the API's
// refusal.
func (c providerPage) addRefused(w http.ResponseWriter, r *http.Request, s *session, f web.MemberForm, err error) {
	if connect.CodeOf(err) == connect.CodeUnauthenticated || connect.CodeOf(err) == connect.CodeNotFound {
		c.fail(w, r, s, err)
		return
	}
	p, status := problemsOf(err)
	f.Problems = memberProblems(p, f)
	c.renderAdd(w, r, s, status, f)
}

// deleteRecord deletes a record and its members (the page asks first), at
// the revision the page showed.
func (c providerPage) deleteRecord(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	tenant, scope := recordScope(r, s)
	rev, err := strconv.ParseUint(strings.TrimSpace(r.PostFormValue("expected_revision")), 10, 64)
	if err != nil {
		rev = 0
	}
	_, err = s.api.Providers.DeleteProvider(r.Context(), connect.NewRequest(&adminv1.DeleteProviderRequest{Tenant: tenant, Name: name, ExpectedRevision: rev}))
	if err != nil {
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			c.fail(w, r, s, err)
			return
		}
		p, _ := problemsOf(err)
		if connect.CodeOf(err) == connect.CodeAborted {
			p.Message = "the record was changed meanwhile; check it, then delete again"
		}
		c.redirect(w, r, web.ProviderHref(name, scope), web.Flash{Kind: web.FlashError, Text: name + " was not deleted: " + p.Message})
		return
	}
	c.redirect(w, r, withScopeQuery("/console/providers", ""), web.Flash{Kind: web.FlashOK, Text: "Record " + name + " deleted."})
}

// shareRecord and unshareRecord share a managed record with a tenant and
// stop sharing it (cluster admins; the API decides).
func (c providerPage) shareRecord(w http.ResponseWriter, r *http.Request, s *session) {
	c.share(w, r, s, true)
}

func (c providerPage) unshareRecord(w http.ResponseWriter, r *http.Request, s *session) {
	c.share(w, r, s, false)
}

func (c providerPage) share(w http.ResponseWriter, r *http.Request, s *session, on bool) {
	name, tenant := r.PathValue("name"), strings.TrimSpace(r.PostFormValue("tenant"))
	var err error
	if on {
		_, err = s.api.Providers.ShareProvider(r.Context(), connect.NewRequest(&adminv1.ShareProviderRequest{Name: name, Tenant: tenant}))
	} else {
		_, err = s.api.Providers.UnshareProvider(r.Context(), connect.NewRequest(&adminv1.UnshareProviderRequest{Name: name, Tenant: tenant}))
	}
	verb := "shared with"
	if !on {
		verb = "unshared from"
	}
	if err != nil {
		if connect.CodeOf(err) == connect.CodeUnauthenticated {
			c.fail(w, r, s, err)
			return
		}
		p, _ := problemsOf(err)
		c.redirect(w, r, web.ProviderHref(name, web.ScopeManaged), web.Flash{Kind: web.FlashError, Text: name + " was not " + verb + " " + tenant + ": " + p.Message})
		return
	}
	c.redirect(w, r, web.ProviderHref(name, web.ScopeManaged), web.Flash{Kind: web.FlashOK, Text: name + " " + verb + " " + tenant + "."})
}
