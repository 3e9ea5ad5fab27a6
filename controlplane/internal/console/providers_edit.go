package console

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/web"
)

// recordEditPage is a record's settings form
// (/console/providers/{name}/edit).
type recordEditPage struct{ *base }

// A record's own settings (UpdateProvider with the revision the form was
// read at), its deletion (DeleteProvider) and, for managed records, sharing
// with tenants (ShareProvider, UnshareProvider).

// recordInputs are the record form's input names (UpdateProviderRequest's
// field paths) for a form of rows price rows.
func recordInputs(rows int) []string {
	names := []string{
		"spec.wire_format", "spec.base_url", "spec.key_secret", "spec.region", "spec.models", "spec.limits.rpm",
		"spec.limits.input_tpm", "spec.limits.output_tpm", "spec.limits.rpd", "spec.limits.max_in_flight", "spec.day_zone", "spec.retains_data", "spec.priority", "spec.default_max_output",
		"spec.tags", "spec.allowed_regions", "spec.rate_limit_headers", "spec.account", "spec.api_version", "spec.internal",
	}
	names = append(names, authInputs...)
	names = append(names, recoveryInputs()...)
	return append(names, priceInputs(rows)...)
}

// loadRecord reads a record the admin may change: NotFound when there is
// none, PermissionDenied when it is read-only to the admin (a managed record
// shared with the tenant, or a role that may not change records).
func (c recordEditPage) loadRecord(r *http.Request, s *session, tenant, scope, name string) (*adminv1.ProviderDetail, error) {
	resp, err := s.api.Providers.GetProvider(r.Context(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: tenant, Name: name}))
	if err != nil {
		return nil, err
	}
	d := resp.Msg.GetDetail()
	if (d.GetRecord().GetManaged() && scope == "") || !canChange(s, tenant) {
		return nil, connect.NewError(connect.CodePermissionDenied, errReadOnly(name))
	}
	return d, nil
}

type readOnlyError string

func (e readOnlyError) Error() string {
	return "record " + strconv.Quote(string(e)) + " is read-only to you"
}

func errReadOnly(name string) error { return readOnlyError(name) }

// show is a record's settings form, filled with its stored values.
func (c recordEditPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderRecord(w, r, s, http.StatusOK, nil)
}

func (c recordEditPage) renderRecord(w http.ResponseWriter, r *http.Request, s *session, status int, form *web.RecordForm) {
	name := r.PathValue("name")
	tenant, scope := recordScope(r, s)
	d, err := c.loadRecord(r, s, tenant, scope, name)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	rec := d.GetRecord()
	var f web.RecordForm
	if form != nil {
		f = *form
	} else {
		f = recordFormOf(rec.GetSpec())
		f.Revision = strconv.FormatUint(rec.GetRevision(), 10)
	}
	f.Prices = padPrices(f.Prices)
	f.CSRF, f.Scope, f.Name, f.Kind, f.Cluster = s.csrf, scope, rec.GetName(), kindName(rec.GetKind()), s.cluster
	f.Action = web.RecordHref(rec.GetName(), scope, "edit")
	c.page(w, r, s, status, "Settings of "+rec.GetName(), "providers", web.RecordEditPage(web.RecordEditView{Record: rec.GetName(), Scope: scope, Form: f}))
}

func recordFormOf(sp *adminv1.ProviderSpec) web.RecordForm {
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	var models []string
	for _, m := range sp.GetModels() {
		models = append(models, m.GetName())
	}
	return web.RecordForm{
		Wire: words.WireFormat(sp.GetWireFormat()), BaseURL: sp.GetBaseUrl(), KeySecret: sp.GetKeySecret(), Models: strings.Join(models, "\n"),
		Region: sp.GetRegion(), RetainsData: yesNo(sp.GetRetainsData()), Tags: kvText(sp.GetTags()),
		AllowedRegions: strings.Join(sp.GetAllowedRegions(), "\n"), RateLimitHeaders: kvText(sp.GetRateLimitHeaders()),
		Priority: num(int64(sp.GetPriority())), DefaultMaxOut: num(sp.GetDefaultMaxOutput()), Account: sp.GetAccount(),
		APIVersion: sp.GetApiVersion(), RPM: num(sp.GetLimits().GetRpm()), InputTPM: num(sp.GetLimits().GetInputTpm()),
		OutputTPM: num(sp.GetLimits().GetOutputTpm()), Internal: sp.GetInternal(), Auth: authFormOf(sp.GetAuth()),
		RPD: num(sp.GetLimits().GetRpd()), MaxInFlight: num(sp.GetLimits().GetMaxInFlight()), DayZone: sp.GetDayZone(),
		Prices: priceRowsOf(sp.GetPrices()), Recovery: recoveryFormOf(sp.GetRecovery()),
	}
}

func recordFormFrom(r *http.Request) web.RecordForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return web.RecordForm{
		Revision: v("expected_revision"), Wire: v("spec.wire_format"), BaseURL: v("spec.base_url"), KeySecret: v("spec.key_secret"),
		Models: r.PostFormValue("spec.models"), Region: v("spec.region"), RetainsData: v("spec.retains_data"),
		Tags: r.PostFormValue("spec.tags"), AllowedRegions: r.PostFormValue("spec.allowed_regions"),
		RateLimitHeaders: r.PostFormValue("spec.rate_limit_headers"), Priority: v("spec.priority"),
		DefaultMaxOut: v("spec.default_max_output"), Account: v("spec.account"), APIVersion: v("spec.api_version"),
		RPM: v("spec.limits.rpm"), InputTPM: v("spec.limits.input_tpm"), OutputTPM: v("spec.limits.output_tpm"),
		RPD: v("spec.limits.rpd"), MaxInFlight: v("spec.limits.max_in_flight"), DayZone: v("spec.day_zone"),
		Internal: r.PostFormValue("spec.internal") != "", Auth: authFormFrom(r), Prices: priceRowsFrom(r),
		Recovery: recoveryFormFrom(r),
	}
}

// recordSpecOf applies the form onto a clone of the stored spec. The
// fields the form does not show (a pool's base_url and limits, internal
// for non-cluster admins) keep their stored values; models keep their
// stored kinds.
func recordSpecOf(f web.RecordForm, stored *adminv1.ProviderSpec, pool, cluster bool, local *problemSet) *adminv1.ProviderSpec {
	spec := proto.Clone(stored).(*adminv1.ProviderSpec)
	spec.WireFormat = parseWire(f.Wire)
	if f.Wire != "" && spec.WireFormat == configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED {
		local.add("spec.wire_format", "unknown wire format")
	}
	if !pool {
		spec.BaseUrl = f.BaseURL
		l := &configv1.Limits{
			Rpm: local.int64("spec.limits.rpm", f.RPM), InputTpm: local.int64("spec.limits.input_tpm", f.InputTPM),
			OutputTpm: local.int64("spec.limits.output_tpm", f.OutputTPM),
			Rpd:       local.int64("spec.limits.rpd", f.RPD), MaxInFlight: local.int64("spec.limits.max_in_flight", f.MaxInFlight),
		}
		spec.Limits = nil
		if declaresLimits(l) {
			spec.Limits = l
		}
	}
	spec.DayZone = f.DayZone
	spec.KeySecret, spec.Region = f.KeySecret, f.Region
	kinds := map[string]*configv1.Model{}
	for _, m := range stored.GetModels() {
		kinds[m.GetName()] = m
	}
	spec.Models = nil
	for _, n := range splitList(f.Models) {
		if m, ok := kinds[n]; ok {
			spec.Models = append(spec.Models, proto.Clone(m).(*configv1.Model))
		} else {
			spec.Models = append(spec.Models, &configv1.Model{Name: n})
		}
	}
	switch f.RetainsData {
	case "yes":
		spec.RetainsData = true
	case "no", "":
		spec.RetainsData = false
	default:
		local.add("spec.retains_data", "choose yes or no")
	}
	spec.Tags = kvOf("spec.tags", f.Tags, local)
	spec.AllowedRegions = splitList(f.AllowedRegions)
	spec.RateLimitHeaders = kvOf("spec.rate_limit_headers", f.RateLimitHeaders, local)
	spec.Priority = int32Of(local, "spec.priority", f.Priority)
	spec.DefaultMaxOutput = local.int64("spec.default_max_output", f.DefaultMaxOut)
	spec.Account, spec.ApiVersion = f.Account, f.APIVersion
	if cluster {
		spec.Internal = f.Internal
	}
	spec.Auth = authOf(f.Auth, local)
	spec.Prices = pricesOf(f.Prices, local)
	spec.Recovery = recoveryOf(f.Recovery, local)
	return spec
}

// recordChanged are the update mask paths of the fields whose value differs
// between the stored spec and the edited one.
func recordChanged(a, b *adminv1.ProviderSpec) []string {
	var out []string
	add := func(path string, changed bool) {
		if changed {
			out = append(out, path)
		}
	}
	names := func(ms []*configv1.Model) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.GetName())
		}
		return out
	}
	add("wire_format", a.GetWireFormat() != b.GetWireFormat())
	add("base_url", a.GetBaseUrl() != b.GetBaseUrl())
	add("auth", !proto.Equal(authOrNil(a.GetAuth()), authOrNil(b.GetAuth())))
	add("key_secret", a.GetKeySecret() != b.GetKeySecret())
	add("models", !slices.Equal(names(a.GetModels()), names(b.GetModels())))
	add("prices", !pricesEqual(a.GetPrices(), b.GetPrices()))
	add("limits.rpm", a.GetLimits().GetRpm() != b.GetLimits().GetRpm())
	add("limits.input_tpm", a.GetLimits().GetInputTpm() != b.GetLimits().GetInputTpm())
	add("limits.output_tpm", a.GetLimits().GetOutputTpm() != b.GetLimits().GetOutputTpm())
	add("limits.rpd", a.GetLimits().GetRpd() != b.GetLimits().GetRpd())
	add("limits.max_in_flight", a.GetLimits().GetMaxInFlight() != b.GetLimits().GetMaxInFlight())
	add("day_zone", a.GetDayZone() != b.GetDayZone())
	add("region", a.GetRegion() != b.GetRegion())
	add("retains_data", a.GetRetainsData() != b.GetRetainsData())
	add("tags", !maps.Equal(a.GetTags(), b.GetTags()))
	add("allowed_regions", !slices.Equal(a.GetAllowedRegions(), b.GetAllowedRegions()))
	add("rate_limit_headers", !maps.Equal(a.GetRateLimitHeaders(), b.GetRateLimitHeaders()))
	add("default_max_output", a.GetDefaultMaxOutput() != b.GetDefaultMaxOutput())
	add("priority", a.GetPriority() != b.GetPriority())
	add("internal", a.GetInternal() != b.GetInternal())
	add("account", a.GetAccount() != b.GetAccount())
	add("api_version", a.GetApiVersion() != b.GetApiVersion())
	return append(out, recoveryChanged(a.GetRecovery(), b.GetRecovery())...)
}

// updateRecord saves a record's settings form: the fields that differ from
// the stored record, as an update mask, with the revision the form was read
// at (a concurrent change is refused, not overwritten). The API is asked
// first with validate_only (preview.go): "Preview changes" shows what would
// change; a save stops at the API's problems and at R-SEC-4 warnings the
// change would add, with "Save anyway".
func (c recordEditPage) updateRecord(w http.ResponseWriter, r *http.Request, s *session) {
	e, ok := c.readRecordEdit(w, r, s)
	if !ok {
		return
	}
	f := e.form
	var local problemSet
	spec := recordSpecOf(f, e.stored, e.pool, s.cluster, &local)
	if local.any() {
		f.Problems = local.problems()
		c.renderRecordForm(w, r, s, http.StatusUnprocessableEntity, e, f)
		return
	}
	paths := recordChanged(e.stored, spec)
	if len(paths) == 0 {
		if asksPreview(r) {
			f.Preview = &web.Preview{}
			c.renderRecordForm(w, r, s, http.StatusOK, e, f)
			return
		}
		c.redirect(w, r, web.ProviderHref(e.name, e.scope), web.Flash{Kind: web.FlashInfo, Text: "Settings of " + e.name + ": nothing changed."})
		return
	}
	req := &adminv1.UpdateProviderRequest{
		Tenant: e.tenant, Name: e.name, Spec: spec, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}, ExpectedRevision: parseRevision(f.Revision),
	}
	if asksPreview(r) || !confirmed(r) {
		req.ValidateOnly = true
		resp, err := s.api.Providers.UpdateProvider(r.Context(), connect.NewRequest(req))
		if err != nil {
			c.recordRefused(w, r, s, e, f, err)
			return
		}
		if rv := reviewOf(resp.Msg, asksPreview(r), sec4New(e.had)); rv.stop() {
			f.Problems = foldProblems(rowProblems(rv.problems), recordInputs(len(f.Prices)))
			f.Warnings, f.Preview = rv.warnings, rv.preview
			c.renderRecordForm(w, r, s, rv.status(), e, f)
			return
		}
		req.ValidateOnly = false
	}
	resp, err := s.api.Providers.UpdateProvider(r.Context(), connect.NewRequest(req))
	if err != nil {
		c.recordRefused(w, r, s, e, f, err)
		return
	}
	flashes := append([]web.Flash{{Kind: web.FlashOK, Text: "Settings of " + e.name + " saved (" + strings.Join(paths, ", ") + ")."}},
		warningFlashes(resp.Msg.GetWarnings())...)
	c.redirect(w, r, web.ProviderHref(e.name, e.scope), flashes...)
}

// recordEdit is a submitted settings form and the record it edits.
type recordEdit struct {
	name, tenant, scope string
	form                web.RecordForm
	stored              *adminv1.ProviderSpec
	pool                bool
	// had are the record's warnings as it is.
	had []*adminv1.Warning
}

// readRecordEdit reads a submitted settings form and the record it edits;
// false when it answered the request (the record could not be read).
func (c recordEditPage) readRecordEdit(w http.ResponseWriter, r *http.Request, s *session) (recordEdit, bool) {
	e := recordEdit{name: r.PathValue("name"), form: recordFormFrom(r)}
	e.tenant, e.scope = recordScope(r, s)
	d, err := c.loadRecord(r, s, e.tenant, e.scope, e.name)
	if err != nil && connect.CodeOf(err) != connect.CodePermissionDenied {
		c.fail(w, r, s, err)
		return e, false
	}
	if d == nil {
		// Read-only to this admin: the API is asked all the same and
		// says why not (a cost owner is refused by its roles).
		resp, gerr := s.api.Providers.GetProvider(r.Context(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: e.tenant, Name: e.name}))
		if gerr != nil {
			c.fail(w, r, s, gerr)
			return e, false
		}
		d = resp.Msg.GetDetail()
	}
	e.had, e.stored = d.GetWarnings(), d.GetRecord().GetSpec()
	if e.stored == nil {
		e.stored = &adminv1.ProviderSpec{}
	}
	e.pool = d.GetRecord().GetKind() == adminv1.RecordKind_RECORD_KIND_POOL
	return e, true
}

// recordRefused shows the settings form again with the API's refusal.
func (c recordEditPage) recordRefused(w http.ResponseWriter, r *http.Request, s *session, e recordEdit, f web.RecordForm, err error) {
	p, status, shown := c.editRefusal(w, r, s, err)
	if shown {
		return
	}
	f.Problems = foldProblems(rowProblems(p), recordInputs(len(f.Prices)))
	c.renderRecordForm(w, r, s, status, e, f)
}

// renderRecordForm re-renders a submitted settings form (values kept).
func (c recordEditPage) renderRecordForm(w http.ResponseWriter, r *http.Request, s *session, status int, e recordEdit, f web.RecordForm) {
	f.Prices = padPrices(f.Prices)
	f.CSRF, f.Scope, f.Name, f.Cluster = s.csrf, e.scope, e.name, s.cluster
	f.Kind = "plain"
	if e.pool {
		f.Kind = "pool"
	}
	f.Action = web.RecordHref(e.name, e.scope, "edit")
	c.page(w, r, s, status, "Settings of "+e.name, "providers", web.RecordEditPage(web.RecordEditView{Record: e.name, Scope: e.scope, Form: f}))
}

// parseRevision is a form's expected_revision; 0 (no check) when it is not
// a number.
func parseRevision(v string) uint64 {
	rev, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0
	}
	return rev
}
