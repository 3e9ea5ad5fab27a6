package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// setupLogin registers the flags of `weir login`.
func setupLogin(fs *flagSet) runFunc {
	url := fs.String("url", "", "`URL` of the admin API, e.g. https://weir.example.com (default $WEIR_URL)")
	token := fs.String("token", "", "admin bearer `TOKEN` (default $WEIR_TOKEN, which keeps it out of the process list)")
	tenant := fs.String("tenant", "", "tenant name `T` saved as the default of tenant-scoped commands")
	return func(ctx context.Context, c *call) error { return c.login(ctx, *url, *token, *tenant) }
}

// login checks the URL and token with WhoAmI and saves them. The tenant is
// saved as given; it is not checked, so that a cluster admin may name a
// tenant before creating it.
func (c *call) login(ctx context.Context, url, token, tenant string) error {
	if url == "" {
		url = c.Getenv("WEIR_URL")
	}
	if token == "" {
		token = c.Getenv("WEIR_TOKEN")
	}
	if url == "" || token == "" {
		return c.badArgsf("--url and --token are required (or WEIR_URL and WEIR_TOKEN)")
	}
	if err := checkURL(url); err != nil {
		return c.badArgsf("%v", err)
	}
	if tenant != "" {
		if err := checkName("tenant", tenant); err != nil {
			return c.badArgsf("%v", err)
		}
	}
	api := newClients(c.HTTPClient, url, token)
	resp, err := api.admins.WhoAmI(ctx, connect.NewRequest(&adminv1.WhoAmIRequest{}))
	if err != nil {
		return fmt.Errorf("check token: %w", err)
	}
	path, err := saveConfig(c.Getenv, Config{URL: strings.TrimRight(url, "/"), Token: token, Tenant: tenant})
	if err != nil {
		return err
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		fmt.Fprintf(w, "logged in to %s as %s (%s)\n", url, resp.Msg.GetAdmin().GetName(), rolesText(resp.Msg.GetAdmin().GetRoles()))
		if tenant != "" {
			fmt.Fprintf(w, "default tenant: %s\n", tenant)
		}
		fmt.Fprintf(w, "saved %s\n", path)
		return nil
	})
}

// rolesText prints role bindings as "cluster-admin, tenant-admin of acme".
func rolesText(roles []*adminv1.RoleBinding) string {
	if len(roles) == 0 {
		return "no roles"
	}
	parts := make([]string, 0, len(roles))
	for _, r := range roles {
		p := words.Role(r.GetRole())
		if r.GetTenant() != "" {
			p += " of " + r.GetTenant()
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// tenantCreate runs `weir tenant create NAME` (TenantService.CreateTenant).
func (c *call) tenantCreate(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.tenants.CreateTenant(ctx, connect.NewRequest(&adminv1.CreateTenantRequest{Name: c.args[0]}))
	if err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "created tenant %s (id %s)\n", resp.Msg.GetTenant().GetName(), resp.Msg.GetTenant().GetId())
		return err
	})
}

// tenantList runs `weir tenant list` (TenantService.ListTenants, every page).
func (c *call) tenantList(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	tenants, err := allPages(ctx, func(ctx context.Context, tok string) ([]*adminv1.Tenant, string, error) {
		r, err := api.tenants.ListTenants(ctx, connect.NewRequest(&adminv1.ListTenantsRequest{PageToken: tok}))
		if err != nil {
			return nil, "", fmt.Errorf("list tenants: %w", err)
		}
		return r.Msg.GetTenants(), r.Msg.GetNextPageToken(), nil
	})
	if err != nil {
		return err
	}
	return c.emit(&adminv1.ListTenantsResponse{Tenants: tenants}, func(w io.Writer) error {
		t := newTable(w, "NAME", "ID", "DISABLED", "CREATED")
		for _, x := range tenants {
			t.row(x.GetName(), x.GetId(), yes(x.GetDisabled()), ts(x.GetCreatedAt()))
		}
		return t.flush()
	})
}

// tenantShow runs `weir tenant show NAME` (TenantService.GetTenant).
func (c *call) tenantShow(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: c.args[0]}))
	if err != nil {
		return fmt.Errorf("show tenant: %w", err)
	}
	m := resp.Msg
	return c.emit(m, func(w io.Writer) error {
		return kv(w,
			"name", m.GetTenant().GetName(),
			"id", m.GetTenant().GetId(),
			"disabled", yes(m.GetTenant().GetDisabled()),
			"created", ts(m.GetTenant().GetCreatedAt()),
			"updated", ts(m.GetTenant().GetUpdatedAt()),
			"rpm", limitText(m.GetTenant().GetLimits().GetRpm()),
			"max in flight", ownMaxInFlight(m.GetTenant()),
			"effective max in flight", fmt.Sprint(m.GetTenant().GetEffectiveMaxInFlight()),
			"allowed regions", orNone(strings.Join(m.GetDataRules().GetAllowedRegions(), ",")),
			"no retained data", yesNo(m.GetDataRules().GetNoRetainedData()),
			"required tags", orNone(joinMap(m.GetDataRules().GetRequiredTags(), nil)),
			"shared records", orNone(strings.Join(m.GetSharedRecords(), ",")),
			"config version", fmt.Sprint(m.GetConfigVersion()),
			"published version", fmt.Sprint(m.GetPublishedVersion()),
			"published at", ts(m.GetPublishedAt()),
		)
	})
}

// orNone prints "" as "none".
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// yesNo prints a boolean as "yes" or "no".
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// setupRulesSet registers the flags of `weir tenant rules set`.
func setupRulesSet(fs *flagSet) runFunc {
	regions := &listFlag{check: func(s string) error { return checkRegion(s, true) }}
	tags := &kvFlag{want: "K=V", check: checkTag}
	fs.Var(regions, "allow-region", "allowed region `R`, or a glob such as eu-* (repeatable; none: any region)")
	noRetained := fs.Bool("no-retained-data", false, "refuse members that retain data")
	fs.Var(tags, "require-tag", "tag `K=V` every member must carry (repeatable)")
	return func(ctx context.Context, c *call) error {
		api, err := c.api()
		if err != nil {
			return err
		}
		rules := &configv1.DataRules{AllowedRegions: regions.vals, NoRetainedData: *noRetained, RequiredTags: tags.m}
		resp, err := api.tenants.SetDataRules(ctx, connect.NewRequest(&adminv1.SetDataRulesRequest{Tenant: c.tenant, Rules: rules}))
		if err != nil {
			return fmt.Errorf("set data rules: %w", err)
		}
		c.printWarnings(resp.Msg.GetWarnings())
		r := resp.Msg.GetRules()
		return c.emit(resp.Msg, func(w io.Writer) error {
			fmt.Fprintf(w, "data rules of %s set\n", c.tenant)
			return kv(w,
				"allowed regions", orNone(strings.Join(r.GetAllowedRegions(), ",")),
				"no retained data", yesNo(r.GetNoRetainedData()),
				"required tags", orNone(joinMap(r.GetRequiredTags(), nil)),
			)
		})
	}
}

// setupKeyCreate registers the flags of `weir key create`.
func setupKeyCreate(fs *flagSet) runFunc {
	models := &listFlag{}
	records := &listFlag{check: func(s string) error { return checkName("record", s) }}
	regions := &listFlag{check: func(s string) error { return checkRegion(s, true) }}
	fs.Var(models, "allow-model", "model `M` the key may call, or \"record/model\" (repeatable; none: every model)")
	fs.Var(records, "allow-provider", "provider `RECORD` the key may use (repeatable; none: every record)")
	fs.Var(regions, "region", "region `R` or glob the key's calls are narrowed to (repeatable)")
	var limits limitFlags
	limits.add(fs, "the key", "no limit")
	return func(ctx context.Context, c *call) error {
		api, err := c.api()
		if err != nil {
			return err
		}
		req := &adminv1.CreateApiKeyRequest{
			Tenant: c.tenant, Name: c.args[0],
			AllowedModels: models.vals, AllowedRecords: records.vals, Regions: regions.vals,
		}
		if c.given["rpm"] || c.given["max-in-flight"] {
			req.Limits = &configv1.CallerLimits{Rpm: limits.rpm.v, MaxInFlight: limits.maxInFlight.v}
		}
		resp, err := api.keys.CreateApiKey(ctx, connect.NewRequest(req))
		if err != nil {
			return fmt.Errorf("create key: %w", err)
		}
		k := resp.Msg
		// The key is shown once: alone on one line, or as {"id","name","key"}.
		if c.json() {
			return c.printPlainJSON(struct {
				ID   string `json:"id"`
				Name string `json:"name"`
				Key  string `json:"key"`
			}{k.GetApiKey().GetId(), k.GetApiKey().GetName(), k.GetKey()})
		}
		_, err = fmt.Fprintln(c.Stdout, k.GetKey())
		return err
	}
}

// keyList runs `weir key list` (ApiKeyService.ListApiKeys, every page).
func (c *call) keyList(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	keys, err := allPages(ctx, func(ctx context.Context, tok string) ([]*adminv1.ApiKey, string, error) {
		r, err := api.keys.ListApiKeys(ctx, connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: c.tenant, PageToken: tok}))
		if err != nil {
			return nil, "", fmt.Errorf("list keys: %w", err)
		}
		return r.Msg.GetApiKeys(), r.Msg.GetNextPageToken(), nil
	})
	if err != nil {
		return err
	}
	return c.emit(&adminv1.ListApiKeysResponse{ApiKeys: keys}, func(w io.Writer) error {
		t := newTable(w, "NAME", "PREFIX", "MODELS", "PROVIDERS", "REGIONS", "RPM", "MAX IN FLIGHT", "CREATED", "LAST USED", "REVOKED")
		for _, k := range keys {
			t.row(k.GetName(), k.GetKeyPrefix(), strings.Join(k.GetAllowedModels(), ","), strings.Join(k.GetAllowedRecords(), ","),
				strings.Join(k.GetRegions(), ","), limitText(k.GetLimits().GetRpm()), limitText(k.GetLimits().GetMaxInFlight()),
				ts(k.GetCreatedAt()), ts(k.GetLastUsedAt()), ts(k.GetRevokedAt()))
		}
		return t.flush()
	})
}

// keyRevoke runs `weir key revoke NAME` (ApiKeyService.RevokeApiKey).
func (c *call) keyRevoke(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.keys.RevokeApiKey(ctx, connect.NewRequest(&adminv1.RevokeApiKeyRequest{Tenant: c.tenant, Name: c.args[0]}))
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "revoked key %s of %s\n", c.args[0], c.tenant)
		return err
	})
}
