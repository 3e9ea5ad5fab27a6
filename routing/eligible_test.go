package routing

import (
	"slices"
	"strings"
	"testing"
)

func memberNames(ms []*Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestEligibility(t *testing.T) {
	t.Parallel()
	build := func() *Record {
		return rec("pool", WireOpenAI, []string{"m", "n"}, []*Member{
			mem("se", region("eu-north"), tag("tier", "gold")),
			mem("fr", region("eu-west"), retains(), tag("tier", "gold")),
			mem("us", region("us-east")),
			mem("none"),
			mem("off", region("eu-west"), off()),
			mem("n-only", region("eu-west"), serves("n")),
		})
	}
	tests := []struct {
		name     string
		rules    DataRules
		key      *Key
		regions  []string
		rec      func(*Record)
		disable  []string
		want     []string
		wantCode string
	}{
		{name: "R-ELIG-1 off and non-serving members are never chosen", want: []string{"se", "fr", "us", "none"}},
		{name: "R-ELIG-1 only off members left", rec: func(r *Record) {
			for _, m := range r.Members {
				m.Off = true
			}
		}, wantCode: CodePoolUnavailable},
		{name: "R-ELIG-2 region glob rule; no region refused", rules: DataRules{AllowedRegions: []string{"eu-*"}}, want: []string{"se", "fr"}},
		{name: "R-ELIG-2 no retained data", rules: DataRules{NoRetainedData: true}, want: []string{"se", "us", "none"}},
		{name: "R-ELIG-2 required tags", rules: DataRules{RequiredTags: map[string]string{"tier": "gold"}}, want: []string{"se", "fr"}},
		{name: "R-ELIG-2 rules refuse every member", rules: DataRules{AllowedRegions: []string{"ap-*"}}, wantCode: CodeDataRule},
		{name: "R-ELIG-2 key regions narrow like a rule", key: &Key{Regions: []string{"us-east", "eu-north"}}, want: []string{"se", "us"}},
		{name: "R-ELIG-2 key regions leave none", rules: DataRules{AllowedRegions: []string{"eu-*"}}, key: &Key{Regions: []string{"us-east"}}, wantCode: CodeProviderNotAllowed},
		{name: "R-ELIG-3 pool allowed regions", rec: func(r *Record) { r.AllowedRegions = []string{"eu-west", "us-east"} }, want: []string{"fr", "us"}},
		{name: "R-ELIG-3 header narrows", regions: []string{"eu-north"}, want: []string{"se"}},
		{name: "R-ELIG-3 header never widens", rec: func(r *Record) { r.AllowedRegions = []string{"eu-west"} }, regions: []string{"eu-west", "us-east"}, want: []string{"fr"}},
		{name: "R-ELIG-3 nothing left", regions: []string{"ap-south"}, wantCode: CodeNoRoute},
		{name: "R-ELIG-4 disabled members are skipped", disable: []string{"se", "fr"}, want: []string{"us", "none"}},
		{name: "R-ELIG-4 only disabled members left", disable: []string{"se", "fr", "us", "none"}, wantCode: CodePoolUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := build()
			if tc.rec != nil {
				tc.rec(r)
			}
			tb := table(tc.rules, r)
			st := NewStates()
			for _, n := range tc.disable {
				st.get(r.ID + "/" + n).disabled = true
			}
			req := chat("m")
			req.Key, req.Regions = tc.key, tc.regions
			got, err := tb.Eligible(r, "m", &req, st)
			if tc.wantCode != "" {
				if err == nil || err.Code != tc.wantCode {
					t.Fatalf("got %v, %v; want %s", memberNames(got), err, tc.wantCode)
				}
				if tc.wantCode == CodeNoRoute && err.Message != "no authorized deployment meets the route constraints" {
					t.Fatalf("message %q", err.Message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(memberNames(got), tc.want) {
				t.Fatalf("eligible %v, want %v", memberNames(got), tc.want)
			}
		})
	}
}

func TestParseRegions(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 65)
	many := strings.Repeat("a,", 32) + "a"
	tests := []struct {
		name string
		in   string
		want []string
		bad  bool
	}{
		{name: "R-ELIG-3 absent header", in: "", want: nil},
		{name: "R-ELIG-3 one", in: "eu-west", want: []string{"eu-west"}},
		{name: "R-ELIG-3 several with spaces", in: " eu-west , us_east-1 ", want: []string{"eu-west", "us_east-1"}},
		{name: "R-ELIG-3 empty name", in: "eu-west,,x", bad: true},
		{name: "R-ELIG-3 bad character", in: "eu west", bad: true},
		{name: "R-ELIG-3 glob is not a name", in: "eu-*", bad: true},
		{name: "R-ELIG-3 name too long", in: long, bad: true},
		{name: "R-ELIG-3 more than 32", in: many, bad: true},
		{name: "R-ELIG-3 exactly 32", in: strings.Repeat("a,", 31) + "a", want: slices.Repeat([]string{"a"}, 32)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRegions(tc.in)
			if tc.bad {
				if err == nil || err.Status != 400 || err.Code != CodeInvalidRequest {
					t.Fatalf("got %v, %v; want 400 invalid_request", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func FuzzParseRegions(f *testing.F) {
	for _, s := range []string{"", "eu-west", "a,b", " , ", "eu-*", strings.Repeat("x,", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseRegions(s)
		if err != nil {
			if got != nil || err.Status != 400 {
				t.Fatalf("error with result %v %v", got, err)
			}
			return
		}
		if len(got) > MaxRegionsInHeader {
			t.Fatalf("%d regions", len(got))
		}
		for _, r := range got {
			if !validRegionName(r) {
				t.Fatalf("invalid region %q accepted", r)
			}
		}
	})
}
