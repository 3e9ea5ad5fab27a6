package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/money"
	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// setupProviderCreate registers the flags of `weir provider create`.
func setupProviderCreate(fs *flagSet) runFunc {
	s := &specFlags{kind: recordCreate}
	s.register(fs)
	return func(ctx context.Context, c *call) error {
		c.fieldWords = s.fieldWords(recordFields(), nil)
		if err := s.check(c.given); err != nil {
			return c.badArgsf("%v", err)
		}
		if s.preset == "" {
			return c.badArgsf("--preset is required")
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		resp, err := api.providers.CreateProvider(ctx, connect.NewRequest(&adminv1.CreateProviderRequest{
			Tenant: c.tenant, Name: c.args[0], Preset: s.presetEnum(), Spec: s.recordSpec(false),
		}))
		if err != nil {
			return fmt.Errorf("create provider %s: %w", c.args[0], err)
		}
		c.printWarnings(resp.Msg.GetWarnings())
		return c.emit(resp.Msg, func(w io.Writer) error {
			r := resp.Msg.GetRecord()
			_, err := fmt.Fprintf(w, "created provider record %s (%s, %s)\n", r.GetName(), kindName(r.GetKind()),
				words.WireFormat(r.GetSpec().GetWireFormat()))
			return err
		})
	}
}

// setupProviderSet registers the flags of `weir provider set`: those of
// create, each changing only its own field (the update mask names exactly
// the flags given).
func setupProviderSet(fs *flagSet) runFunc {
	s := &specFlags{kind: recordSet}
	s.register(fs)
	return func(ctx context.Context, c *call) error {
		c.fieldWords = s.fieldWords(recordFields(), nil)
		if err := s.check(c.given); err != nil {
			return c.badArgsf("%v", err)
		}
		mask := s.mask(recordFields())
		if len(mask.GetPaths()) == 0 && s.preset == "" {
			return c.badArgsf("nothing to change: give the flags of the fields to set")
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		resp, err := api.providers.UpdateProvider(ctx, connect.NewRequest(&adminv1.UpdateProviderRequest{
			Tenant: c.tenant, Name: c.args[0], Preset: s.presetEnum(), Spec: s.recordSpec(false), UpdateMask: mask,
		}))
		if err != nil {
			return fmt.Errorf("update provider %s: %w", c.args[0], err)
		}
		c.printWarnings(resp.Msg.GetWarnings())
		return c.emit(resp.Msg, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "updated provider record %s (revision %d)\n", resp.Msg.GetRecord().GetName(), resp.Msg.GetRecord().GetRevision())
			return err
		})
	}
}

// providerShow runs `weir provider show RECORD` (ProviderService.GetProvider).
// The record's current warnings are printed on stderr too.
func (c *call) providerShow(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.providers.GetProvider(ctx, connect.NewRequest(&adminv1.GetProviderRequest{Tenant: c.tenant, Name: c.args[0]}))
	if err != nil {
		return fmt.Errorf("show provider %s: %w", c.args[0], err)
	}
	c.printWarnings(resp.Msg.GetDetail().GetWarnings())
	dropEndedCooldowns(resp.Msg.GetDetail().GetMembers(), time.Now())
	return c.emit(resp.Msg, func(w io.Writer) error { return printDetail(w, resp.Msg.GetDetail()) })
}

// providerList runs `weir provider list` (ProviderService.ListProviders,
// every page, with the managed records shared with the tenant).
func (c *call) providerList(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	records, err := allPages(ctx, func(ctx context.Context, tok string) ([]*adminv1.ProviderRecord, string, error) {
		r, err := api.providers.ListProviders(ctx, connect.NewRequest(&adminv1.ListProvidersRequest{
			Tenant: c.tenant, IncludeShared: c.tenant != "", PageToken: tok,
		}))
		if err != nil {
			return nil, "", fmt.Errorf("list providers: %w", err)
		}
		return r.Msg.GetRecords(), r.Msg.GetNextPageToken(), nil
	})
	if err != nil {
		return err
	}
	return c.emit(&adminv1.ListProvidersResponse{Records: records}, func(w io.Writer) error {
		t := newTable(w, "NAME", "KIND", "PRESET", "WIRE", "MODELS", "MEMBERS", "MANAGED", "REVISION", "UPDATED")
		for _, r := range records {
			t.row(r.GetName(), kindName(r.GetKind()), words.Preset(r.GetPreset()),
				words.WireFormat(r.GetSpec().GetWireFormat()), modelsText(r.GetSpec().GetModels()),
				strings.Join(r.GetMemberNames(), ","), yes(r.GetManaged()), strconv.FormatUint(r.GetRevision(), 10), ts(r.GetUpdatedAt()))
		}
		return t.flush()
	})
}

// providerDelete runs `weir provider delete RECORD`.
func (c *call) providerDelete(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.providers.DeleteProvider(ctx, connect.NewRequest(&adminv1.DeleteProviderRequest{Tenant: c.tenant, Name: c.args[0]}))
	if err != nil {
		return fmt.Errorf("delete provider %s: %w", c.args[0], err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "deleted provider record %s\n", c.args[0])
		return err
	})
}

// setupShare registers `weir provider share|unshare RECORD --tenant T`. Here
// --tenant names the tenant to share with, not a scope: the record is always
// a managed one.
func setupShare(share bool) func(fs *flagSet) runFunc {
	return func(fs *flagSet) runFunc {
		tenant := fs.String("tenant", "", "tenant name `T` to share the managed record with, or stop sharing it with")
		return func(ctx context.Context, c *call) error {
			if *tenant == "" {
				return c.badArgsf("--tenant is required")
			}
			if err := checkName("tenant", *tenant); err != nil {
				return c.badArgsf("%v", err)
			}
			api, err := c.api()
			if err != nil {
				return err
			}
			if share {
				resp, err := api.providers.ShareProvider(ctx, connect.NewRequest(&adminv1.ShareProviderRequest{Name: c.args[0], Tenant: *tenant}))
				if err != nil {
					return fmt.Errorf("share provider %s: %w", c.args[0], err)
				}
				return c.emit(resp.Msg, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "shared %s with %s (now shared with %s)\n", c.args[0], *tenant, strings.Join(resp.Msg.GetRecord().GetSharedWith(), ","))
					return err
				})
			}
			resp, err := api.providers.UnshareProvider(ctx, connect.NewRequest(&adminv1.UnshareProviderRequest{Name: c.args[0], Tenant: *tenant}))
			if err != nil {
				return fmt.Errorf("unshare provider %s: %w", c.args[0], err)
			}
			return c.emit(resp.Msg, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "unshared %s from %s\n", c.args[0], *tenant)
				return err
			})
		}
	}
}

// setupPoolAdd registers the flags of `weir provider pool add`.
//
// The member gets every field a member can hold. When the record does not
// exist, the add creates it: --preset then applies to the record (the
// member inherits), and --models and the record-only flags (--allow-region,
// recovery, --rate-limit-header, --default-max-output, --priority,
// --internal) go into the new record's spec. To know which case applies when
// such a flag is given, the record is looked up first; on an existing record
// those flags are a usage error (use `provider set`), and --models is the
// member's subset of the record's models.
func setupPoolAdd(fs *flagSet) runFunc {
	s := &specFlags{kind: memberAdd}
	s.register(fs)
	return func(ctx context.Context, c *call) error {
		c.fieldWords = s.fieldWords(memberFields(), recordFields())
		if err := s.check(c.given); err != nil {
			return c.badArgsf("%v", err)
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		record, member := c.args[0], c.args[1]
		req := &adminv1.AddPoolMemberRequest{
			Tenant: c.tenant, Record: record, Member: member, Preset: s.presetEnum(),
			Spec: s.memberSpec(), RecordMember: s.recordMember,
		}
		recordOnly := s.givenOf(recordOnlyFlags()...)
		if len(recordOnly) > 0 || s.given["models"] {
			_, err := api.providers.GetProvider(ctx, connect.NewRequest(&adminv1.GetProviderRequest{Tenant: c.tenant, Name: record}))
			switch {
			case connect.CodeOf(err) == connect.CodeNotFound:
				req.RecordSpec = s.recordSpec(true)
				req.Spec.Models = nil
			case err != nil:
				return fmt.Errorf("look up provider %s: %w", record, err)
			case len(recordOnly) > 0:
				return c.badArgsf("%s change the record, which exists: use weir provider set %s", strings.Join(recordOnly, ", "), record)
			}
		}
		resp, err := api.pools.AddPoolMember(ctx, connect.NewRequest(req))
		if err != nil {
			return fmt.Errorf("add member %s to %s: %w", member, record, err)
		}
		c.printWarnings(resp.Msg.GetWarnings())
		return c.emit(resp.Msg, func(w io.Writer) error {
			m := resp.Msg
			note := ""
			switch {
			case m.GetRecordCreated():
				note = " (record created as a pool)"
			case m.GetRecordConverted():
				note = " (the plain record became a pool; its endpoint is now a member)"
			}
			_, err := fmt.Fprintf(w, "added member %s to %s%s; members: %s\n", member, record, note,
				strings.Join(m.GetRecord().GetMemberNames(), ","))
			return err
		})
	}
}

// setupPoolSet registers the flags of `weir provider pool set`: each flag
// given changes its field only (the update mask), --off and --on switch the
// member.
func setupPoolSet(fs *flagSet) runFunc {
	s := &specFlags{kind: memberSet}
	s.register(fs)
	return func(ctx context.Context, c *call) error {
		c.fieldWords = s.fieldWords(memberFields(), nil)
		if err := s.check(c.given); err != nil {
			return c.badArgsf("%v", err)
		}
		mask := s.mask(memberFields())
		if len(mask.GetPaths()) == 0 && s.preset == "" {
			return c.badArgsf("nothing to change: give --off, --on or the flags of the fields to set")
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		record, member := c.args[0], c.args[1]
		resp, err := api.pools.UpdatePoolMember(ctx, connect.NewRequest(&adminv1.UpdatePoolMemberRequest{
			Tenant: c.tenant, Record: record, Member: member, Preset: s.presetEnum(), Spec: s.memberSpec(), UpdateMask: mask,
		}))
		if err != nil {
			return fmt.Errorf("update member %s of %s: %w", member, record, err)
		}
		c.printWarnings(resp.Msg.GetWarnings())
		return c.emit(resp.Msg, func(w io.Writer) error {
			state := ""
			if s.given["off"] || s.given["on"] {
				state = " (on)"
				if resp.Msg.GetMember().GetEffective().GetOff() {
					state = " (off)"
				}
			}
			_, err := fmt.Fprintf(w, "updated member %s of %s%s\n", member, record, state)
			return err
		})
	}
}

// poolRemove runs `weir provider pool remove RECORD MEMBER`.
func (c *call) poolRemove(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	record, member := c.args[0], c.args[1]
	resp, err := api.pools.RemovePoolMember(ctx, connect.NewRequest(&adminv1.RemovePoolMemberRequest{Tenant: c.tenant, Record: record, Member: member}))
	if err != nil {
		return fmt.Errorf("remove member %s of %s: %w", member, record, err)
	}
	c.printWarnings(resp.Msg.GetWarnings())
	return c.emit(resp.Msg, func(w io.Writer) error {
		fmt.Fprintf(w, "removed member %s from %s\n", member, record)
		if resp.Msg.GetRecordPlain() {
			fmt.Fprintf(w, "%s is a plain record again, with the endpoint and settings of %s\n", record, member)
		}
		return nil
	})
}

// poolList runs `weir provider pool list RECORD` (PoolService.ListPoolMembers,
// every page).
func (c *call) poolList(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	members, err := allPages(ctx, func(ctx context.Context, tok string) ([]*adminv1.MemberDetail, string, error) {
		r, err := api.pools.ListPoolMembers(ctx, connect.NewRequest(&adminv1.ListPoolMembersRequest{Tenant: c.tenant, Record: c.args[0], PageToken: tok}))
		if err != nil {
			return nil, "", fmt.Errorf("list members of %s: %w", c.args[0], err)
		}
		return r.Msg.GetMembers(), r.Msg.GetNextPageToken(), nil
	})
	if err != nil {
		return err
	}
	dropEndedCooldowns(members, time.Now())
	return c.emit(&adminv1.ListPoolMembersResponse{Members: members}, func(w io.Writer) error {
		return printMembers(w, members)
	})
}

// poolReset runs `weir provider pool reset RECORD MEMBER` (R-OBS-4).
func (c *call) poolReset(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	record, member := c.args[0], c.args[1]
	resp, err := api.pools.ResetPoolMember(ctx, connect.NewRequest(&adminv1.ResetPoolMemberRequest{Tenant: c.tenant, Record: record, Member: member}))
	if err != nil {
		return fmt.Errorf("reset member %s of %s: %w", member, record, err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "reset of %s/%s sent to every edge (command %s, %s)\n", record, member,
			resp.Msg.GetCommandId(), ts(resp.Msg.GetIssuedAt()))
		return err
	})
}

// kindName prints a record kind: "plain" or "pool".
func kindName(k adminv1.RecordKind) string { return words.RecordKind(k) }

// modelsText prints model names separated by commas.
func modelsText(ms []*configv1.Model) string {
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, m.GetName())
	}
	return strings.Join(names, ",")
}

// authText prints an auth in one line, e.g. "api-key (header api-key)".
func authText(a *configv1.Auth) string {
	if a == nil {
		return ""
	}
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+" "+v)
		}
	}
	add("header", a.GetHeader())
	add("service", a.GetAwsService())
	add("region", a.GetAwsRegion())
	add("access key secret", a.GetAccessKeySecret())
	add("token url", a.GetTokenUrl())
	add("client id", a.GetClientId())
	add("client secret secret", a.GetClientSecretSecret())
	add("scopes", strings.Join(a.GetScopes(), ","))
	s := words.AuthKind(a.GetKind())
	if len(parts) > 0 {
		s = strings.TrimSpace(s + " (" + strings.Join(parts, ", ") + ")")
	}
	return s
}

// limitsText prints declared limits, "" when none is declared: the
// per-minute ones when any is declared, then rpd and max in flight when
// declared.
func limitsText(l *configv1.Limits) string {
	var parts []string
	if l.GetRpm() != 0 || l.GetInputTpm() != 0 || l.GetOutputTpm() != 0 {
		parts = append(parts, fmt.Sprintf("rpm %d, input tpm %d, output tpm %d", l.GetRpm(), l.GetInputTpm(), l.GetOutputTpm()))
	}
	if l.GetRpd() != 0 {
		parts = append(parts, fmt.Sprintf("rpd %d", l.GetRpd()))
	}
	if l.GetMaxInFlight() != 0 {
		parts = append(parts, fmt.Sprintf("max in flight %d", l.GetMaxInFlight()))
	}
	return strings.Join(parts, ", ")
}

// recoveryText prints the recovery settings given, "" when none is.
func recoveryText(r *configv1.Recovery) string {
	var parts []string
	if r.GetMaxAttempts() != 0 {
		parts = append(parts, fmt.Sprintf("max attempts %d", r.GetMaxAttempts()))
	}
	for _, d := range []struct {
		name string
		v    string
	}{{"call deadline", dur(r.GetCallDeadline())}, {"attempt deadline", dur(r.GetAttemptDeadline())},
		{"cooldown base", dur(r.GetCooldownBase())}, {"cooldown max", dur(r.GetCooldownMax())}, {"max wait", dur(r.GetMaxWait())}} {
		if d.v != "" {
			parts = append(parts, d.name+" "+d.v)
		}
	}
	return strings.Join(parts, ", ")
}

// printDetail prints `weir provider show`: the record (its routing summary
// right after its name, when the server gives one), its prices, then its
// members with inherited fields resolved and each edge's view.
func printDetail(w io.Writer, d *adminv1.ProviderDetail) error {
	r := d.GetRecord()
	sp := r.GetSpec()
	owner := r.GetTenant()
	if r.GetManaged() {
		owner = "managed"
	}
	err := kv(w,
		"record", r.GetName(),
		"routing", d.GetRoutingSummary(),
		"tenant", owner,
		"kind", kindName(r.GetKind()),
		"preset", words.Preset(r.GetPreset()),
		"wire format", words.WireFormat(sp.GetWireFormat()),
		"base url", sp.GetBaseUrl(),
		"auth", authText(sp.GetAuth()),
		"key secret", sp.GetKeySecret(),
		"models", modelsText(sp.GetModels()),
		"region", sp.GetRegion(),
		"retains data", yes(sp.GetRetainsData()),
		"tags", joinMap(sp.GetTags(), nil),
		"limits", limitsText(sp.GetLimits()),
		"day zone", sp.GetDayZone(),
		"allowed regions", strings.Join(sp.GetAllowedRegions(), ","),
		"rate-limit headers", joinMap(sp.GetRateLimitHeaders(), nil),
		"recovery", recoveryText(sp.GetRecovery()),
		"default max output", nonZero(sp.GetDefaultMaxOutput()),
		"priority", nonZero(int64(sp.GetPriority())),
		"internal", yes(sp.GetInternal()),
		"account", sp.GetAccount(),
		"api version", sp.GetApiVersion(),
		"shared with", strings.Join(r.GetSharedWith(), ","),
		"revision", strconv.FormatUint(r.GetRevision(), 10),
		"created", ts(r.GetCreatedAt()),
		"updated", ts(r.GetUpdatedAt()),
	)
	if err != nil {
		return err
	}
	if len(sp.GetPrices()) > 0 {
		fmt.Fprintln(w, "\nrecord prices (USD per million tokens):")
		t := newTable(w, "MODEL", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE")
		for _, p := range sp.GetPrices() {
			t.row(append([]string{p.GetModel()}, strings.Split(formatPrice(p), ",")...)...)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return printMembers(w, d.GetMembers())
}

// nonZero prints n, "" for 0.
func nonZero(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// printMembers prints a summary table of members, then each member's
// effective fields; a value taken from the record is marked "(inherited)".
func printMembers(w io.Writer, members []*adminv1.MemberDetail) error {
	if len(members) == 0 {
		_, err := fmt.Fprintln(w, "no members")
		return err
	}
	t := newTable(w, "MEMBER", "FORMAT", "ORDER", "WEIGHT", "STATE", "REGION", "BASE URL")
	for _, m := range members {
		e := m.GetEffective()
		state := "on"
		if e.GetOff() {
			state = "off"
		}
		t.row(m.GetMember().GetName(), words.WireFormat(e.GetWireFormat()), strconv.FormatUint(uint64(e.GetOrder()), 10),
			strconv.FormatUint(uint64(e.GetWeight()), 10), state, e.GetRegion(), e.GetBaseUrl())
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, m := range members {
		if err := printMember(w, m); err != nil {
			return err
		}
	}
	return nil
}

// printMember prints one member's effective fields and edge views.
func printMember(w io.Writer, m *adminv1.MemberDetail) error {
	e := m.GetEffective()
	inherited := map[string]bool{}
	for _, f := range e.GetInheritedFields() {
		inherited[f] = true
	}
	mark := func(field, v string) string {
		if v != "" && inherited[field] {
			return v + " (inherited)"
		}
		return v
	}
	inheritedTags := map[string]bool{}
	for _, k := range e.GetInheritedTagKeys() {
		inheritedTags[k] = true
	}
	fmt.Fprintf(w, "\nmember %s:\n", m.GetMember().GetName())
	var lines []string
	add := func(name, v string) {
		if v != "" {
			lines = append(lines, "  "+name+"\t"+v)
		}
	}
	add("format", mark("wire_format", words.WireFormat(e.GetWireFormat())))
	add("base url", mark("base_url", e.GetBaseUrl()))
	add("auth", mark("auth", authText(e.GetAuth())))
	add("key secret", mark("key_secret", e.GetKeySecret()))
	add("region", mark("region", e.GetRegion()))
	add("retains data", mark("retains_data", yesNo(e.GetRetainsData())))
	add("models", mark("models", strings.Join(e.GetModels(), ",")))
	add("model map", joinMap(e.GetModelMap(), nil))
	add("tags", tagsText(e.GetTags(), inheritedTags))
	add("limits", mark("limits", limitsText(e.GetLimits())))
	add("account", mark("account", e.GetAccount()))
	add("api version", mark("api_version", e.GetApiVersion()))
	add("weight", strconv.FormatUint(uint64(e.GetWeight()), 10))
	add("order", strconv.FormatUint(uint64(e.GetOrder()), 10))
	if e.GetOff() {
		add("state", "off")
	}
	for _, p := range e.GetPrices() {
		add("price "+p.GetPrice().GetModel(), resolvedPriceText(p))
	}
	for _, v := range m.GetEdgeViews() {
		add("edge "+v.GetView().GetEdgeId(), viewText(v))
	}
	return kvLines(w, lines)
}

// kvLines writes tab-separated "name\tvalue" lines aligned.
func kvLines(w io.Writer, lines []string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	return tw.Flush()
}

// tagsText prints tags "k=v", marking the record's with "(inherited)".
func tagsText(tags map[string]string, inherited map[string]bool) string {
	s := joinMap(tags, inherited)
	return strings.ReplaceAll(s, "*", " (inherited)")
}

// resolvedPriceText prints a member's effective price in dollars per
// million tokens, naming the parts taken from the record.
func resolvedPriceText(p *adminv1.ResolvedPrice) string {
	pr := p.GetPrice()
	var parts []string
	for _, x := range []struct {
		name string
		v    *int64
	}{{"input", pr.InputMicros}, {"output", pr.OutputMicros}, {"cache read", pr.CacheReadMicros}, {"cache write", pr.CacheWriteMicros}} {
		if x.v != nil {
			parts = append(parts, x.name+" "+money.FormatMicros(*x.v))
		}
	}
	s := strings.Join(parts, ", ")
	if s == "" {
		s = "unpriced"
	}
	s += " USD/Mtok"
	if len(p.GetInheritedParts()) > 0 {
		s += " (inherited: " + strings.ReplaceAll(strings.Join(p.GetInheritedParts(), ", "), "_", " ") + ")"
	}
	if !p.GetWhole() {
		s += " (not whole)"
	}
	return s
}

// dropEndedCooldowns removes from the edges' views every cooldown that
// ended by now. A view is the edge's last report, so it may name a cooldown
// whose time has passed since; the member is not cooling then, and `provider
// show` and `pool list` (text and JSON) show only cooldowns still running,
// as the console does.
func dropEndedCooldowns(members []*adminv1.MemberDetail, now time.Time) {
	for _, m := range members {
		for _, ev := range m.GetEdgeViews() {
			v := ev.GetView()
			if cd := v.GetCooldown(); cd != nil && !cd.GetUntil().AsTime().After(now) {
				v.Cooldown = nil
			}
		}
	}
}

// inFlightText prints an edge's calls in flight to a member against its
// cap there (R-CAP-1): "in flight 3/5", or "in flight 3" with no cap.
func inFlightText(v *telemetryv1.MemberView) string {
	if v.GetMaxInFlight() > 0 {
		return fmt.Sprintf("in flight %d/%d", v.GetInFlight(), v.GetMaxInFlight())
	}
	return fmt.Sprintf("in flight %d", v.GetInFlight())
}

// todayText prints an edge's calls to a member today against its share of
// the declared rpd (R-HEAD-6): "today 120/1000", or "today 120" with none.
func todayText(v *telemetryv1.MemberView) string {
	if v.GetRpdShare() > 0 {
		return fmt.Sprintf("today %d/%d", v.GetRequestsToday(), v.GetRpdShare())
	}
	return fmt.Sprintf("today %d", v.GetRequestsToday())
}

// viewText prints one edge's view of a member (R-OBS-1) in one line.
func viewText(ev *adminv1.EdgeView) string {
	v := ev.GetView()
	parts := []string{fmt.Sprintf("headroom %s%%", strconv.FormatFloat(v.GetHeadroom()*100, 'f', 0, 64))}
	if cd := v.GetCooldown(); cd != nil && cd.GetUntil() != nil {
		c := "cooling until " + ts(cd.GetUntil())
		if k := words.CooldownKind(cd.GetKind()); k != "" {
			c += " (" + k
			if cd.GetReason() != "" {
				c += ": " + cd.GetReason()
			}
			c += ")"
		}
		parts = append(parts, c)
	}
	if v.GetLastStatus() != 0 {
		last := fmt.Sprintf("last status %d", v.GetLastStatus())
		if at := ts(v.GetLastStatusAt()); at != "" {
			last += " at " + at
		}
		parts = append(parts, last)
	}
	if v.GetSpent() {
		parts = append(parts, "spent")
	}
	if v.GetDisabled() {
		parts = append(parts, "disabled")
	}
	parts = append(parts, inFlightText(v))
	if v.GetRpdShare() > 0 || v.GetRequestsToday() > 0 {
		parts = append(parts, todayText(v))
	}
	if at := ts(v.GetObservedAt()); at != "" {
		parts = append(parts, "observed "+at)
	}
	if ev.GetExpired() {
		parts = append(parts, "expired")
	}
	return strings.Join(parts, ", ")
}
