package compile

import (
	"errors"
	"strings"
	"testing"

	configv1 "weir.dev/proto/gen/weir/config/v1"

	"weir.dev/routing"
)

// R-CAP-2: the tenant's and each key's caller limits reach the table; a
// tenant's max_in_flight of 0 takes the cluster default, and 512 when the
// cluster sets none (or there is no cluster snapshot).
func TestCallerLimitsRCAP2(t *testing.T) {
	t.Parallel()
	const sha = "X+imFfYncvRe85CjJK/fsu2hv2KyhzaQZfAU14tfdW0="
	tests := []struct {
		name       string
		tenant     string // the tenant's "limits" member, "" for none
		key        string // the key's "limits" member, "" for none
		cluster    *configv1.ClusterSnapshot
		wantTenant routing.CallerLimits
		wantKey    routing.CallerLimits
	}{
		{name: "no limits, no cluster snapshot: 512", wantTenant: routing.CallerLimits{MaxInFlight: 512}},
		{name: "no limits, cluster default 0: 512", cluster: &configv1.ClusterSnapshot{},
			wantTenant: routing.CallerLimits{MaxInFlight: 512}},
		{name: "cluster default applies", cluster: &configv1.ClusterSnapshot{DefaultTenantMaxInFlight: 3},
			tenant: `{"rpm": 60}`, wantTenant: routing.CallerLimits{RPM: 60, MaxInFlight: 3}},
		{name: "own max_in_flight wins over the cluster default", cluster: &configv1.ClusterSnapshot{DefaultTenantMaxInFlight: 3},
			tenant: `{"max_in_flight": 7}`, wantTenant: routing.CallerLimits{MaxInFlight: 7}},
		{name: "key limits carried, no default for keys",
			key:        `{"rpm": 5, "max_in_flight": 2}`,
			wantTenant: routing.CallerLimits{MaxInFlight: 512}, wantKey: routing.CallerLimits{RPM: 5, MaxInFlight: 2}},
		{name: "upper ends of the ranges", tenant: `{"rpm": 100000000, "max_in_flight": 1000000}`, key: `{"rpm": 100000000}`,
			wantTenant: routing.CallerLimits{RPM: 100000000, MaxInFlight: 1000000}, wantKey: routing.CallerLimits{RPM: 100000000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := parseTenant(t, snapWithLimits(tt.tenant, tt.key, sha))
			table, keys, err := build(ts, tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if table.Limits != tt.wantTenant {
				t.Errorf("tenant limits %+v, want %+v", table.Limits, tt.wantTenant)
			}
			if got := keys[0].Key.Limits; got != tt.wantKey {
				t.Errorf("key limits %+v, want %+v", got, tt.wantKey)
			}
		})
	}
}

// R-CAP-2: limits out of their ranges (negative, above 100000000 rpm or
// 1000000 in flight) are problems like other invalid fields, and so is a
// cluster default out of range.
func TestCallerLimitsRangesRCAP2(t *testing.T) {
	t.Parallel()
	ts := parseTenant(t, snapWithLimits(`{"rpm": -1, "max_in_flight": 1000001}`, `{"rpm": 100000001, "max_in_flight": -2}`,
		"X+imFfYncvRe85CjJK/fsu2hv2KyhzaQZfAU14tfdW0="))
	table, err := Compile(ts, &configv1.ClusterSnapshot{DefaultTenantMaxInFlight: -5})
	if table != nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Compile = %v, %v; want a refusal", table, err)
	}
	want := []string{
		`tenant: limits.rpm: must be 0-100000000, got -1`,
		`tenant: limits.max_in_flight: must be 0-1000000, got 1000001`,
		`cluster: default_tenant_max_in_flight: must be 0-1000000, got -5`,
		`key "ci": limits.rpm: must be 0-100000000, got 100000001`,
		`key "ci": limits.max_in_flight: must be 0-1000000, got -2`,
	}
	ps := Problems(err)
	if len(ps) != len(want) {
		t.Fatalf("problems %v, want %d", ps, len(want))
	}
	for i, p := range ps {
		if !strings.Contains(p.Error(), want[i]) {
			t.Errorf("problem %d = %q, want %q", i, p.Error(), want[i])
		}
	}
}

func snapWithLimits(tenant, key, sha string) string {
	tl, kl := "", ""
	if tenant != "" {
		tl = `, "limits": ` + tenant
	}
	if key != "" {
		kl = `, "limits": ` + key
	}
	return `{"tenant": {"id": "t", "name": "t"` + tl + `}, "api_keys": [{"id": "k", "name": "ci", "sha256": "` + sha + `"` + kl + `}]}`
}
