package admin

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

func text(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }

func TestPeriods(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 2, 17, 15, 4, 5, 0, time.FixedZone("x", 3600))
	tests := []struct {
		period     string
		start, end time.Time
	}{
		{"day", time.Date(2026, 2, 17, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 18, 0, 0, 0, 0, time.UTC)},
		{"month", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"total", now.UTC(), time.Time{}},
	}
	for _, tc := range tests {
		s := periodStart(tc.period, now)
		if !s.Equal(tc.start) || !periodEnd(tc.period, s).Equal(tc.end) {
			t.Errorf("%s: start %v end %v; want %v %v", tc.period, s, periodEnd(tc.period, s), tc.start, tc.end)
		}
	}
	at := time.Date(2026, 2, 17, 15, 4, 5, 0, time.UTC)
	for g, want := range map[adminv1.UsageGranularity]time.Time{
		adminv1.UsageGranularity_USAGE_GRANULARITY_CALL:  at,
		adminv1.UsageGranularity_USAGE_GRANULARITY_HOUR:  time.Date(2026, 2, 17, 15, 0, 0, 0, time.UTC),
		adminv1.UsageGranularity_USAGE_GRANULARITY_DAY:   time.Date(2026, 2, 17, 0, 0, 0, 0, time.UTC),
		adminv1.UsageGranularity_USAGE_GRANULARITY_MONTH: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got := bucketStart(at, g); !got.Equal(want) {
			t.Errorf("bucketStart(%v) = %v, want %v", g, got, want)
		}
	}
}

// A pool whose members inherit the record's key secret, region and tags
// unless they set their own.
func testRecord() record {
	return record{
		rec: sqlc.ProviderRecord{Name: "gpt", Pool: true, KeySecret: text("shared"), Region: "us-east",
			Tags: []byte(`{"team":"x"}`), AccessKeySecret: text("aws"), TokenURL: "https://login.example.com/token"},
		members: []sqlc.PoolMember{
			{Name: "eu1", BaseURL: "https://eu.example.com/v1", Region: text("eu-west"), Tags: []byte(`{}`)},
			{Name: "eu2", BaseURL: "https://EU.example.com:8443/v1", Region: text("eu-north"), Tags: []byte(`{"team":"y"}`)},
			{Name: "us1", BaseURL: "http://us.example.com/v1", KeySecret: text("own"), AuthKind: text("api_key"), Tags: []byte(`{}`), RetainsData: pgtype.Bool{Bool: true, Valid: true}},
		},
	}
}

func TestEndpointsInherit(t *testing.T) {
	t.Parallel()
	var got []string
	for _, e := range testRecord().endpoints() {
		h, p, _ := e.sendHost("key_secret")
		got = append(got, e.member+" "+e.region+" "+e.tags["team"]+" "+e.secrets["key_secret"].name+" "+h+":"+p)
	}
	want := []string{
		"eu1 eu-west x shared eu.example.com:443",
		"eu2 eu-north y shared eu.example.com:8443",
		"us1 us-east x own us.example.com:80",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	eps := testRecord().endpoints()
	if _, ok := eps[2].secrets["auth.access_key_secret"]; ok {
		t.Error("a member with its own auth inherited the record's access key secret")
	}
	if _, ok := eps[0].secrets["auth.access_key_secret"]; !ok {
		t.Error("a member without auth did not inherit the record's")
	}
}

func TestRulesAdmitAndBinding(t *testing.T) {
	t.Parallel()
	eps := testRecord().endpoints()
	rules := &configv1.DataRules{AllowedRegions: []string{"eu-*"}, NoRetainedData: true, RequiredTags: map[string]string{"team": "x"}}
	var admitted []string
	for _, e := range eps {
		if rulesAdmit(rules, e) {
			admitted = append(admitted, e.member)
		}
	}
	if diff := cmp.Diff([]string{"eu1"}, admitted); diff != "" {
		t.Errorf("admitted (-want +got):\n%s", diff)
	}
	if !rulesAdmit(&configv1.DataRules{}, endpoint{}) || rulesAdmit(&configv1.DataRules{AllowedRegions: []string{"*"}}, endpoint{}) {
		t.Error("empty rules must admit all; a region rule must refuse a member without region")
	}
	for _, tc := range []struct {
		hosts      []string
		host, port string
		want       bool
	}{
		{[]string{"eu.example.com"}, "eu.example.com", "8443", true},
		{[]string{"eu.example.com:443"}, "eu.example.com", "8443", false},
		{[]string{"eu.example.com:443"}, "eu.example.com", "443", true},
		{[]string{"[::1]"}, "::1", "80", true},
		{[]string{"other.example.com"}, "eu.example.com", "443", false},
	} {
		if got := boundTo(tc.hosts, tc.host, tc.port); got != tc.want {
			t.Errorf("boundTo(%v, %s:%s) = %v", tc.hosts, tc.host, tc.port, got)
		}
	}
	w := hostMismatches(testRecord().endpoints(), "shared", []string{"eu.example.com:443"}, "")
	if len(w) != 1 || !cmp.Equal(w[0].GetMembers(), []string{"eu2"}) {
		t.Errorf("host mismatches = %v", w)
	}
}

func TestSharedAccounts(t *testing.T) {
	t.Parallel()
	var got []string
	for _, f := range sharedAccounts("a", []record{testRecord()}) {
		got = append(got, f.GetMessage())
	}
	want := []string{
		`members eu1, eu2 of record "gpt" share the key secret "shared": they are probably one account and add no capacity`,
		`members eu1, eu2 of record "gpt" share the host "eu.example.com": they are probably one account and add no capacity`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestAWSCredentialsShape(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"AKIA:secret":   true,
		"AKIA:secret\n": true,
		`{"access_key_id":"AKIA","secret_access_key":"s","session_token":"t"}`: true,
		`{"access_key_id":"AKIA"}`:      false,
		`{"access_key_id":"A","x":"y"}`: false,
		"just-a-key":                    false,
		"a:b:c":                         false,
	} {
		if got := awsCredentialsShape(v); got != want {
			t.Errorf("awsCredentialsShape(%q) = %v", v, got)
		}
	}
}
