package console

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/formats"
	"weir.dev/web"
)

// providersPage is the providers page (/console/providers): the records
// the admin sees and the create form.
type providersPage struct{ *base }

// createMemberRows is how many member rows the create form offers.
const createMemberRows = 3

// recordScope returns the owner a providers page or form addresses: the
// managed records ("" tenant) when scope=managed is asked for by a cluster
// admin, else the current tenant.
func recordScope(r *http.Request, s *session) (tenant, scope string) {
	if r.FormValue("scope") == web.ScopeManaged && s.cluster {
		return "", web.ScopeManaged
	}
	return s.tenant, ""
}

// canChange reports whether the admin may change the records of tenant
// (cluster admins, tenant and provider admins of it). It only decides what
// the pages offer; the API decides what is done.
func canChange(s *session, tenant string) bool {
	if s.cluster {
		return true
	}
	if tenant == "" {
		return false
	}
	for _, part := range strings.Split(s.role, ", ") {
		if part == "tenant admin of "+tenant || part == "provider admin of "+tenant {
			return true
		}
	}
	return false
}

// show lists the records: the tenant's own and those shared with
// it, and for cluster admins the managed ones; with the create form.
func (c providersPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderProviders(w, r, s, http.StatusOK, c.blankProviderForm(s, ""))
}

func (c providersPage) blankProviderForm(s *session, scope string) web.ProviderForm {
	f := web.ProviderForm{CSRF: s.csrf, Kind: "pool", Scope: scope}
	for range createMemberRows {
		f.Members = append(f.Members, web.NewMember{})
	}
	return f
}

func (c providersPage) renderProviders(w http.ResponseWriter, r *http.Request, s *session, status int, f web.ProviderForm) {
	ctx := r.Context()
	v := web.ProvidersView{CSRF: s.csrf, Tenant: s.tenant, ShowManaged: s.cluster}
	if s.tenant == "" && !s.cluster {
		c.page(w, r, s, http.StatusForbidden, "Providers", "providers", web.ErrorBody(http.StatusForbidden, "You hold no role on any tenant."))
		return
	}
	if s.tenant != "" {
		recs, err := listRecords(ctx, s.api, s.tenant, true)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		for _, rec := range recs {
			row := providerRow(rec, "")
			if rec.GetManaged() {
				row.Shared = true
			}
			v.Records = append(v.Records, row)
		}
	}
	if s.cluster {
		recs, err := listRecords(ctx, s.api, "", false)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		for _, rec := range recs {
			v.Managed = append(v.Managed, providerRow(rec, web.ScopeManaged))
		}
	}
	v.CanCreate = canChange(s, s.tenant)
	if s.cluster {
		if s.tenant != "" {
			f.Scopes = append(f.Scopes, web.Option{Value: "", Label: "Tenant " + s.tenant, Selected: f.Scope == ""})
		}
		f.Scopes = append(f.Scopes, web.Option{Value: web.ScopeManaged, Label: "Managed (cluster)", Selected: f.Scope == web.ScopeManaged || s.tenant == ""})
	}
	f.CSRF = s.csrf
	v.Create = f
	c.page(w, r, s, status, "Providers and pools", "providers", web.ProvidersPage(v))
}

func providerRow(rec *adminv1.ProviderRecord, scope string) web.ProviderRow {
	row := web.ProviderRow{
		Name: rec.GetName(), Scope: scope, Kind: kindName(rec.GetKind()), Preset: words.Preset(rec.GetPreset()),
		Wire: words.WireFormat(rec.GetSpec().GetWireFormat()), Members: len(rec.GetMemberNames()), Revision: rec.GetRevision(),
	}
	if rec.GetManaged() {
		row.Scope = web.ScopeManaged
	}
	if rec.GetKind() != adminv1.RecordKind_RECORD_KIND_POOL {
		row.Members = 1
	}
	if rec.GetUpdatedAt() != nil {
		row.Updated = rec.GetUpdatedAt().AsTime()
	}
	return row
}

// kindName is a record's kind: plain or pool.
func kindName(k adminv1.RecordKind) string {
	if n := words.RecordKind(k); n != "" {
		return n
	}
	return "plain"
}

// parseWire is the wire format of a form's value, by its word in the one
// table of wire format names (weir.dev/routing/formats); "" or an unknown
// word is unspecified (the API then applies the preset's, or the form
// reports the unknown word).
func parseWire(s string) configv1.WireFormat {
	w, _ := formats.WireFormats.ParseWord(s)
	return w
}

// parsePreset is the preset of a form's value, by the preset enum's word
// (words.Parse, the inverse of words.Preset: "azure-openai"); "" or an
// unknown word is unspecified.
func parsePreset(s string) adminv1.Preset {
	p, _ := words.Parse[adminv1.Preset](s)
	return p
}

// createProvider creates a record (plain) or a pool with its members. The
// API is asked first with validate_only (preview.go): its problems, or the
// R-SEC-4 warnings the new record would have, with "Save anyway", are
// shown before anything is saved; the API's warnings after saving come as
// flashes.
func (c providersPage) createProvider(w http.ResponseWriter, r *http.Request, s *session) {
	f, tenant, scope := createFormOf(r, s)
	req, local := createRequestOf(&f, tenant)
	for len(f.Members) < createMemberRows && f.Kind == "pool" {
		f.Members = append(f.Members, web.NewMember{})
	}
	if f.Kind == "plain" {
		for range createMemberRows {
			f.Members = append(f.Members, web.NewMember{})
		}
	}
	if local.any() {
		f.Problems = local.problems()
		c.renderProviders(w, r, s, http.StatusUnprocessableEntity, f)
		return
	}
	if !confirmed(r) {
		req.ValidateOnly = true
		resp, err := s.api.Providers.CreateProvider(r.Context(), connect.NewRequest(req))
		if err != nil {
			c.createRefused(w, r, s, f, err)
			return
		}
		var names []string
		for _, m := range req.GetMembers() {
			names = append(names, m.GetName())
		}
		if rv := reviewOf(resp.Msg, false, sec4Naming(names...)); rv.stop() {
			f.Problems, f.Warnings = foldProblems(rv.problems, createInputs(len(f.Members))), rv.warnings
			c.renderProviders(w, r, s, rv.status(), f)
			return
		}
		req.ValidateOnly = false
	}
	resp, err := s.api.Providers.CreateProvider(r.Context(), connect.NewRequest(req))
	if err != nil {
		c.createRefused(w, r, s, f, err)
		return
	}
	kind := "Provider"
	if resp.Msg.GetRecord().GetKind() == adminv1.RecordKind_RECORD_KIND_POOL {
		kind = "Pool"
	}
	flashes := append([]web.Flash{{Kind: web.FlashOK, Text: kind + " " + f.Name + " created."}}, warningFlashes(resp.Msg.GetWarnings())...)
	c.redirect(w, r, web.ProviderHref(f.Name, scope), flashes...)
}

// createRefused shows the create form again with the API's refusal.
func (c providersPage) createRefused(w http.ResponseWriter, r *http.Request, s *session, f web.ProviderForm, err error) {
	if connect.CodeOf(err) == connect.CodeUnauthenticated {
		c.fail(w, r, s, err)
		return
	}
	p, status := problemsOf(err)
	f.Problems = foldProblems(p, createInputs(len(f.Members)))
	c.renderProviders(w, r, s, status, f)
}

// createFormOf reads the create form posted in r: the form as it is
// re-rendered (kind "plain" or "pool"; scope managed only for a cluster
// admin; the non-blank member rows, renumbered), and the tenant the record
// goes to with its scope ("" and web.ScopeManaged for a managed record,
// else the session's tenant and "").
func createFormOf(r *http.Request, s *session) (f web.ProviderForm, tenant, scope string) {
	f = web.ProviderForm{
		Scope: r.PostFormValue("scope"), Name: strings.TrimSpace(r.PostFormValue("name")), Kind: r.PostFormValue("kind"),
		Preset: r.PostFormValue("preset"), Wire: r.PostFormValue("spec.wire_format"),
		BaseURL: strings.TrimSpace(r.PostFormValue("spec.base_url")), KeySecret: strings.TrimSpace(r.PostFormValue("spec.key_secret")),
		Models: r.PostFormValue("spec.models"), Region: strings.TrimSpace(r.PostFormValue("spec.region")),
		RPM: strings.TrimSpace(r.PostFormValue("spec.limits.rpm")), InputTPM: strings.TrimSpace(r.PostFormValue("spec.limits.input_tpm")),
		OutputTPM: strings.TrimSpace(r.PostFormValue("spec.limits.output_tpm")), Recovery: recoveryFormFrom(r),
		RPD: strings.TrimSpace(r.PostFormValue("spec.limits.rpd")), MaxInFlight: strings.TrimSpace(r.PostFormValue("spec.limits.max_in_flight")),
		DayZone: strings.TrimSpace(r.PostFormValue("spec.day_zone")),
	}
	if f.Kind != "plain" {
		f.Kind = "pool"
	}
	tenant, scope = s.tenant, ""
	if f.Scope == web.ScopeManaged && s.cluster {
		tenant, scope = "", web.ScopeManaged
	} else {
		f.Scope = ""
	}
	// Member rows: blank ones dropped, the rest renumbered (the form is
	// re-rendered in that order, so problems keep their rows).
	for i := 0; i < 16; i++ {
		m := web.NewMember{
			Name:      strings.TrimSpace(r.PostFormValue(fmt.Sprintf("members[%d].name", i))),
			BaseURL:   strings.TrimSpace(r.PostFormValue(fmt.Sprintf("members[%d].spec.base_url", i))),
			KeySecret: strings.TrimSpace(r.PostFormValue(fmt.Sprintf("members[%d].spec.key_secret", i))),
			Weight:    strings.TrimSpace(r.PostFormValue(fmt.Sprintf("members[%d].spec.weight", i))),
		}
		if m != (web.NewMember{}) {
			f.Members = append(f.Members, m)
		}
	}
	return f, tenant, scope
}

// createRequestOf returns the CreateProviderRequest form f asks for in
// tenant, and the problems of values the form itself cannot read (the
// recovery settings, preset, then limits or member weights, in that
// order). A plain record's member rows are dropped from f; a pool's limits
// are not read.
func createRequestOf(f *web.ProviderForm, tenant string) (*adminv1.CreateProviderRequest, problemSet) {
	var local problemSet
	req := &adminv1.CreateProviderRequest{Tenant: tenant, Name: f.Name, Preset: parsePreset(f.Preset)}
	spec := &adminv1.ProviderSpec{
		WireFormat: parseWire(f.Wire), KeySecret: f.KeySecret, Region: f.Region,
		Models: modelsOf(splitList(f.Models)), Recovery: recoveryOf(f.Recovery, &local), DayZone: f.DayZone,
	}
	if f.Preset != "" && req.Preset == adminv1.Preset_PRESET_UNSPECIFIED {
		local.add("preset", "unknown preset")
	}
	if f.Kind == "plain" {
		spec.BaseUrl = f.BaseURL
		spec.Limits = &configv1.Limits{
			Rpm: local.int64("spec.limits.rpm", f.RPM), InputTpm: local.int64("spec.limits.input_tpm", f.InputTPM),
			OutputTpm: local.int64("spec.limits.output_tpm", f.OutputTPM),
			Rpd:       local.int64("spec.limits.rpd", f.RPD), MaxInFlight: local.int64("spec.limits.max_in_flight", f.MaxInFlight),
		}
		if !declaresLimits(spec.Limits) {
			spec.Limits = nil
		}
		f.Members = nil
	} else {
		spec.BaseUrl = f.BaseURL // refused by the API when set: a pool's members have the URLs
		if len(f.Members) == 0 {
			local.add("members[0].name", "a pool needs at least one member: fill in a row, or choose a plain record")
		}
		for i, m := range f.Members {
			req.Members = append(req.Members, &adminv1.NewPoolMember{Name: m.Name, Spec: &adminv1.PoolMemberSpec{
				BaseUrl: m.BaseURL, KeySecret: optString(m.KeySecret), Weight: local.uint32(fmt.Sprintf("members[%d].spec.weight", i), m.Weight),
			}})
		}
	}
	req.Spec = spec
	return req, local
}

// createInputs are the create form's input names.
func createInputs(members int) []string {
	names := []string{"scope", "name", "kind", "preset", "spec.wire_format", "spec.key_secret", "spec.region", "spec.models",
		"spec.base_url", "spec.limits.rpm", "spec.limits.input_tpm", "spec.limits.output_tpm", "spec.limits.rpd",
		"spec.limits.max_in_flight", "spec.day_zone"}
	names = append(names, recoveryInputs()...)
	for i := range max(members, createMemberRows) {
		for _, f := range []string{"name", "spec.base_url", "spec.key_secret", "spec.weight"} {
			names = append(names, fmt.Sprintf("members[%d].%s", i, f))
		}
	}
	return names
}

// recordSettings are a record's settings as the page lists them. Secret
// names are shown (they are names, never values).
func recordSettings(rec *adminv1.ProviderRecord, cluster bool) []web.Setting {
	sp := rec.GetSpec()
	var models []string
	for _, m := range sp.GetModels() {
		models = append(models, m.GetName())
	}
	out := []web.Setting{
		{Key: "kind", Label: "Kind", Value: kindName(rec.GetKind())},
		{Key: "preset", Label: "Preset", Value: words.Preset(rec.GetPreset())},
		{Key: "wire_format", Label: "Wire format", Value: words.WireFormat(sp.GetWireFormat())},
	}
	if rec.GetKind() != adminv1.RecordKind_RECORD_KIND_POOL {
		out = append(out, web.Setting{Key: "base_url", Label: "Base URL", Value: sp.GetBaseUrl()})
	}
	out = append(out,
		web.Setting{Key: "auth", Label: "Auth", Value: authText(sp.GetAuth())},
		web.Setting{Key: "key_secret", Label: "Key secret", Value: sp.GetKeySecret()},
		web.Setting{Key: "models", Label: "Models", Value: strings.Join(models, ", ")},
		web.Setting{Key: "region", Label: "Region", Value: sp.GetRegion()},
		web.Setting{Key: "limits", Label: "Limits (per minute)", Value: limitsText(sp.GetLimits())},
		web.Setting{Key: "retains_data", Label: "Retains data", Value: yesNo(sp.GetRetainsData())},
		web.Setting{Key: "tags", Label: "Tags", Value: mapText(sp.GetTags())},
		web.Setting{Key: "allowed_regions", Label: "Allowed regions", Value: strings.Join(sp.GetAllowedRegions(), ", ")},
		web.Setting{Key: "prices", Label: "Prices ($ per M tokens)", Value: pricesText(sp.GetPrices())},
		web.Setting{Key: "priority", Label: "Priority", Value: strconv.Itoa(int(sp.GetPriority()))},
		web.Setting{Key: "account", Label: "Account", Value: sp.GetAccount()},
		web.Setting{Key: "api_version", Label: "API version", Value: sp.GetApiVersion()},
		web.Setting{Key: "recovery", Label: "Recovery", Value: recoveryText(sp.GetRecovery())},
		web.Setting{Key: "revision", Label: "Revision", Value: strconv.FormatUint(rec.GetRevision(), 10)},
	)
	if sp.GetInternal() {
		out = append(out, web.Setting{Key: "internal", Label: "Internal", Value: "yes"})
	}
	if cluster && rec.GetManaged() {
		out = append(out, web.Setting{Key: "shared_with", Label: "Shared with", Value: strings.Join(rec.GetSharedWith(), ", ")})
	}
	return out
}

// memberRow is a member with every resolved field, inherited ones marked.
func memberRow(md *adminv1.MemberDetail, plain bool) web.MemberRow {
	e := md.GetEffective()
	inh := map[string]bool{}
	for _, f := range e.GetInheritedFields() {
		inh[f] = true
	}
	var prices []string
	for _, p := range e.GetPrices() {
		prices = append(prices, priceText(p.GetPrice()))
	}
	row := web.MemberRow{Name: md.GetMember().GetName(), Off: e.GetOff(), Primary: plain}
	row.Settings = []web.Setting{
		{Key: "base_url", Label: "Base URL", Value: e.GetBaseUrl(), Inherited: inh["base_url"] && !plain},
		{Key: "auth", Label: "Auth", Value: authText(e.GetAuth()), Inherited: inh["auth"]},
		{Key: "key_secret", Label: "Key secret", Value: e.GetKeySecret(), Inherited: inh["key_secret"]},
		{Key: "region", Label: "Region", Value: e.GetRegion(), Inherited: inh["region"]},
		{Key: "weight", Label: "Weight", Value: strconv.Itoa(int(e.GetWeight()))},
		{Key: "order", Label: "Order", Value: strconv.Itoa(int(e.GetOrder()))},
		{Key: "limits", Label: "Limits (per minute)", Value: limitsText(e.GetLimits()), Inherited: inh["limits"] && !plain},
		{Key: "models", Label: "Models", Value: strings.Join(e.GetModels(), ", "), Inherited: inh["models"]},
		{Key: "model_map", Label: "Model map", Value: mapText(e.GetModelMap())},
		{Key: "tags", Label: "Tags", Value: mapText(e.GetTags())},
		{Key: "retains_data", Label: "Retains data", Value: yesNo(e.GetRetainsData()), Inherited: inh["retains_data"]},
		{Key: "account", Label: "Account", Value: e.GetAccount(), Inherited: inh["account"]},
		{Key: "api_version", Label: "API version", Value: e.GetApiVersion(), Inherited: inh["api_version"]},
		{Key: "prices", Label: "Prices ($ per M tokens)", Value: strings.Join(prices, "; ")},
	}
	return row
}

func authText(a *configv1.Auth) string {
	if a == nil {
		return ""
	}
	kind := words.AuthKind(a.GetKind())
	switch a.GetKind() {
	case configv1.AuthKind_AUTH_KIND_API_KEY:
		return kind + " (header " + a.GetHeader() + ")"
	case configv1.AuthKind_AUTH_KIND_SIGV4:
		return kind + " (service " + a.GetAwsService() + ", region " + a.GetAwsRegion() + ", access key secret " + a.GetAccessKeySecret() + ")"
	case configv1.AuthKind_AUTH_KIND_OAUTH2:
		return kind + " (token URL " + a.GetTokenUrl() + ", client " + a.GetClientId() + ", client secret " + a.GetClientSecretSecret() + ")"
	case configv1.AuthKind_AUTH_KIND_UNSPECIFIED:
		if a.GetHeader() != "" {
			return "header " + a.GetHeader()
		}
	}
	return kind
}

func limitsText(l *configv1.Limits) string {
	var parts []string
	if l.GetRpm() != 0 {
		parts = append(parts, strconv.FormatInt(l.GetRpm(), 10)+" requests")
	}
	if l.GetInputTpm() != 0 {
		parts = append(parts, strconv.FormatInt(l.GetInputTpm(), 10)+" input tokens")
	}
	if l.GetOutputTpm() != 0 {
		parts = append(parts, strconv.FormatInt(l.GetOutputTpm(), 10)+" output tokens")
	}
	return strings.Join(parts, ", ")
}

func mapText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}

func pricesText(ps []*configv1.Price) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, priceText(p))
	}
	return strings.Join(parts, "; ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func webWarnings(ws []*adminv1.Warning) []web.Warning {
	var out []web.Warning
	for _, w := range ws {
		out = append(out, webWarning(w))
	}
	return out
}

func webWarning(w *adminv1.Warning) web.Warning {
	return web.Warning{Code: w.GetCode(), Message: w.GetMessage(), Members: w.GetMembers()}
}

// warningFlashes shows the warnings an accepted change returned.
func warningFlashes(ws []*adminv1.Warning) []web.Flash {
	var out []web.Flash
	for _, w := range ws {
		out = append(out, web.Flash{Kind: web.FlashWarn, Text: "Warning (" + w.GetCode() + "): " + w.GetMessage()})
	}
	return out
}

// inheritInto fills a member form's placeholders with the record's values
// the member inherits where its own field is empty.
func inheritInto(f *web.MemberForm, sp *adminv1.ProviderSpec) {
	out := map[string]string{"spec.base_url": "https://api.example.com/v1"}
	set := func(k, v string) {
		if v != "" {
			out[k] = "record: " + v
		}
	}
	set("spec.key_secret", sp.GetKeySecret())
	set("spec.region", sp.GetRegion())
	set("spec.account", sp.GetAccount())
	set("spec.api_version", sp.GetApiVersion())
	set("spec.tags", strings.ReplaceAll(kvText(sp.GetTags()), "\n", ", "))
	var models []string
	for _, m := range sp.GetModels() {
		models = append(models, m.GetName())
	}
	set("spec.models", strings.Join(models, ", "))
	out["spec.weight"], out["spec.order"] = "1", "1"
	f.Inherit = out
	f.AuthInherit = "The record's"
	if a := authText(sp.GetAuth()); a != "" {
		f.AuthInherit += ": " + a
	}
	f.RetainsInherit = "The record's: " + yesNo(sp.GetRetainsData())
	f.RecordPrices = map[string]web.PriceRow{}
	for _, r := range priceRowsOf(sp.GetPrices()) {
		f.RecordPrices[r.Model] = r
	}
}

// splitList splits a textarea's list: one item a line or separated by
// commas, blanks dropped.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' || r == '\r' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func modelsOf(names []string) []*configv1.Model {
	var out []*configv1.Model
	for _, n := range names {
		out = append(out, &configv1.Model{Name: n})
	}
	return out
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// problemSet collects the problems the console finds itself (numbers that
// do not parse) before asking the API.
type problemSet struct{ list []web.FieldProblem }

func (p *problemSet) add(field, msg string) {
	p.list = append(p.list, web.FieldProblem{Field: field, Message: msg})
}

func (p *problemSet) any() bool { return len(p.list) > 0 }

func (p *problemSet) int64(field, v string) int64 {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		p.add(field, "must be a whole number, 0 or more")
		return 0
	}
	return n
}

func (p *problemSet) uint32(field, v string) uint32 {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		p.add(field, "must be a whole number, 0 or more")
		return 0
	}
	return uint32(n)
}

func (p *problemSet) problems() web.Problems {
	out := web.Problems{List: p.list, Fields: map[string]string{}}
	for _, fp := range p.list {
		if old, ok := out.Fields[fp.Field]; ok {
			out.Fields[fp.Field] = old + "; " + fp.Message
		} else {
			out.Fields[fp.Field] = fp.Message
		}
	}
	if len(p.list) == 1 {
		out.Message = "1 problem: nothing was saved."
	} else {
		out.Message = strconv.Itoa(len(p.list)) + " problems: nothing was saved."
	}
	return out
}

// foldProblems attaches each problem of a field that has no input of its
// own to the input whose name is the longest prefix of the field's path
// ("spec.models[2].name" to the "spec.models" textarea), so that it is
// shown next to that input too; the summary keeps the exact paths.
func foldProblems(p web.Problems, inputs []string) web.Problems {
	if len(p.Fields) == 0 {
		return p
	}
	has := map[string]bool{}
	for _, n := range inputs {
		has[n] = true
	}
	out := web.Problems{Message: p.Message, List: p.List, Fields: map[string]string{}}
	addTo := func(k, m string) {
		if old, ok := out.Fields[k]; ok {
			out.Fields[k] = old + "; " + m
		} else {
			out.Fields[k] = m
		}
	}
	fields := make([]string, 0, len(p.Fields))
	for f := range p.Fields {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		m := p.Fields[f]
		if has[f] {
			addTo(f, m)
			continue
		}
		best := ""
		for _, n := range inputs {
			if len(n) > len(best) && strings.HasPrefix(f, n) && len(f) > len(n) && (f[len(n)] == '.' || f[len(n)] == '[') {
				best = n
			}
		}
		if best != "" {
			addTo(best, f[len(best):]+": "+m)
		} else {
			out.Fields[f] = m
		}
	}
	return out
}

func pathEscape(s string) string { return url.PathEscape(s) }

func withScopeQuery(p, scope string) string {
	if scope == "" {
		return p
	}
	return p + "?scope=" + scope
}

// declaresLimits reports whether any limit is declared (not 0).
func declaresLimits(l *configv1.Limits) bool {
	return l.GetRpm() != 0 || l.GetInputTpm() != 0 || l.GetOutputTpm() != 0 || l.GetRpd() != 0 || l.GetMaxInFlight() != 0
}
