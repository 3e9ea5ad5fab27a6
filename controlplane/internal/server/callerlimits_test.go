package server_test

import (
	"context"
	"crypto/rand"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"weir.dev/controlplane/internal/snapshot"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// TestTenantLimitsRCAP2: R-CAP-2 caller limits of a tenant. Tenant admins
// set any rpm and a max_in_flight up to the cluster default (512 here);
// raising it above the default takes a cluster admin; a tenant admin may
// keep or lower a value a cluster admin set above it. Every Tenant message
// carries the limits and the effective max_in_flight, and the change
// reaches the tenant's snapshot with a new config version.
func TestTenantLimitsRCAP2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	set := func(as string, rpm, mif int64) (*adminv1.Tenant, error) {
		t.Helper()
		r, err := e.as[as].tenants.SetTenantLimits(ctx, connect.NewRequest(&adminv1.SetTenantLimitsRequest{
			Tenant: "a", Limits: &configv1.CallerLimits{Rpm: rpm, MaxInFlight: mif}}))
		if err != nil {
			return nil, err
		}
		return r.Msg.GetTenant(), nil
	}
	check := func(what string, got *adminv1.Tenant, rpm, mif, eff int64) {
		t.Helper()
		if got.GetLimits().GetRpm() != rpm || got.GetLimits().GetMaxInFlight() != mif || got.GetEffectiveMaxInFlight() != eff {
			t.Errorf("%s: limits %v, effective %d; want rpm %d, max_in_flight %d, effective %d",
				what, got.GetLimits(), got.GetEffectiveMaxInFlight(), rpm, mif, eff)
		}
	}
	before, err := e.as[tadmA].tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	check("new tenant", before.Msg.GetTenant(), 0, 0, 512)

	got, err := set(tadmA, 1200, 512) // up to the default: a tenant admin may
	if err != nil {
		t.Fatal(err)
	}
	check("tenant admin at the default", got, 1200, 512, 512)
	after, err := e.as[costA].tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	check("GetTenant", after.Msg.GetTenant(), 1200, 512, 512)
	if after.Msg.GetConfigVersion() <= before.Msg.GetConfigVersion() {
		t.Errorf("config version %d after %d: the change would not reach edges", after.Msg.GetConfigVersion(), before.Msg.GetConfigVersion())
	}

	if _, err := set(tadmA, 1200, 513); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("tenant admin above the default: %v, want PermissionDenied", err)
	}
	for _, r := range []string{padmA, costA} {
		if _, err := set(r, 1, 1); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("%s: %v, want PermissionDenied", r, err)
		}
	}
	if got, err = set(cluster, 0, 2000); err != nil {
		t.Fatalf("cluster admin above the default: %v", err)
	}
	check("cluster admin above the default", got, 0, 2000, 2000)
	if got, err = set(tadmA, 50, 2000); err != nil { // keeps what a cluster admin set
		t.Errorf("tenant admin keeping 2000: %v", err)
	} else {
		check("kept", got, 50, 2000, 2000)
	}
	if _, err := set(tadmA, 50, 2001); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("tenant admin raising 2000 to 2001: %v, want PermissionDenied", err)
	}
	if got, err = set(tadmA, 50, 1000); err != nil { // lowers it
		t.Errorf("tenant admin lowering to 1000: %v", err)
	}
	check("lowered", got, 50, 1000, 1000)

	// The snapshot edges get carries the tenant's limits.
	rows, err := snapshot.LoadTenant(ctx, e.st.Pool(), e.ids["a"])
	if err != nil {
		t.Fatal(err)
	}
	if rows.Tenant.RPM != 50 || rows.Tenant.MaxInFlight != 1000 {
		t.Errorf("stored limits rpm %d max_in_flight %d", rows.Tenant.RPM, rows.Tenant.MaxInFlight)
	}

	if got, err = set(tadmA, 0, 0); err != nil { // none of its own: the default applies
		t.Fatal(err)
	}
	check("none", got, 0, 0, 512)
	list, err := e.as[tadmA].tenants.ListTenants(ctx, connect.NewRequest(&adminv1.ListTenantsRequest{}))
	if err != nil || len(list.Msg.GetTenants()) != 1 {
		t.Fatalf("ListTenants = %v, %v", list, err)
	}
	check("ListTenants", list.Msg.GetTenants()[0], 0, 0, 512)

	ev, err := e.as[cluster].audit.ListAuditEvents(ctx, connect.NewRequest(&adminv1.ListAuditEventsRequest{TargetPrefix: "tenant_limits/"}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ev.Msg.GetEvents()); n != 5 {
		t.Errorf("%d audit events for tenant limits, want 5 (one per change)", n)
	}
}

// TestKeyLimitsRCAP2: an API key's caller limits (R-CAP-2). They only narrow
// the tenant's, so a tenant admin may set any in range, above the cluster
// default included; they are listed and reach the snapshot.
func TestKeyLimitsRCAP2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	want := &configv1.CallerLimits{Rpm: 100_000_000, MaxInFlight: 1_000_000}
	r, err := e.as[tadmA].keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "batch", Limits: want}))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(r.Msg.GetApiKey().GetLimits(), want) {
		t.Errorf("created key limits = %v", r.Msg.GetApiKey().GetLimits())
	}
	if _, err := e.as[tadmA].keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "plain"})); err != nil {
		t.Fatal(err)
	}
	l, err := e.as[costA].keys.ListApiKeys(ctx, connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*configv1.CallerLimits{}
	for _, k := range l.Msg.GetApiKeys() {
		got[k.GetName()] = k.GetLimits()
	}
	if !proto.Equal(got["batch"], want) || got["plain"].GetRpm() != 0 || got["plain"].GetMaxInFlight() != 0 {
		t.Errorf("listed limits = %v", got)
	}
	rows, err := snapshot.LoadTenant(ctx, e.st.Pool(), e.ids["a"])
	if err != nil {
		t.Fatal(err)
	}
	ts, err := snapshot.BuildTenant(rows, nil, make([]byte, 32), rand.Reader) // no secrets: nothing is opened
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ts.GetApiKeys() {
		if k.GetName() == "batch" && !proto.Equal(k.GetLimits(), want) {
			t.Errorf("snapshot key limits = %v", k.GetLimits())
		}
		if k.GetName() == "plain" && k.GetLimits() != nil {
			t.Errorf("snapshot: a key without limits has %v", k.GetLimits())
		}
	}
}
