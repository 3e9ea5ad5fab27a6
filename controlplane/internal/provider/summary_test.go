package provider

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// eff is a resolved member for summary tables: name, region, weight,
// order, off.
type eff struct {
	name, region  string
	weight, order uint32
	off           bool
}

func detailOf(kind adminv1.RecordKind, spec *adminv1.ProviderSpec, members ...eff) *adminv1.ProviderDetail {
	d := &adminv1.ProviderDetail{Record: &adminv1.ProviderRecord{Name: "r", Kind: kind, Spec: spec}}
	for _, m := range members {
		d.Members = append(d.Members, &adminv1.MemberDetail{
			Member:    &adminv1.PoolMember{Name: m.name},
			Effective: &adminv1.EffectiveMember{Region: m.region, Weight: m.weight, Order: m.order, Off: m.off},
		})
	}
	return d
}

func TestRoutingSummary(t *testing.T) {
	t.Parallel()
	plain, pool := adminv1.RecordKind_RECORD_KIND_PLAIN, adminv1.RecordKind_RECORD_KIND_POOL
	sec := func(n int) *durationpb.Duration { return durationpb.New(time.Duration(n) * time.Second) }
	tests := []struct {
		name string
		d    *adminv1.ProviderDetail
		want string
	}{
		{
			name: "plain record with a region",
			d:    detailOf(plain, &adminv1.ProviderSpec{Region: "eu-west"}, eff{"primary", "eu-west", 1, 1, false}),
			want: "One endpoint in eu-west; default recovery",
		},
		{
			name: "plain record without a region",
			d:    detailOf(plain, nil, eff{"primary", "", 1, 1, false}),
			want: "One endpoint; default recovery",
		},
		{
			name: "weighted pool narrowed to regions, max wait",
			d: detailOf(pool, &adminv1.ProviderSpec{AllowedRegions: []string{"eu-*"}, Recovery: &configv1.Recovery{MaxWait: sec(3)}},
				eff{"france", "eu-west", 2, 1, false}, eff{"sweden", "eu-north", 1, 1, false}),
			want: "Weighted across 2 members, only in eu-*; recovery overridden: max wait 3s",
		},
		{
			name: "equal weights",
			d:    detailOf(pool, nil, eff{"a", "", 1, 1, false}, eff{"b", "", 1, 1, false}, eff{"c", "", 1, 1, false}),
			want: "Evenly across 3 members; default recovery",
		},
		{
			name: "one primary, two fallbacks, one member off",
			d: detailOf(pool, nil, eff{"a", "", 1, 1, false}, eff{"b", "", 1, 2, false}, eff{"c", "", 5, 2, false},
				eff{"d", "", 1, 1, true}),
			want: "Ordered: 1 primary member, 2 fallbacks; 1 member off; default recovery",
		},
		{
			name: "the off member's order does not count",
			d:    detailOf(pool, nil, eff{"a", "", 1, 1, true}, eff{"b", "", 1, 2, false}, eff{"c", "", 1, 2, false}),
			want: "Evenly across 2 members; 1 member off; default recovery",
		},
		{
			name: "weighted primaries, fallbacks in two tiers",
			d: detailOf(pool, nil, eff{"a", "", 3, 1, false}, eff{"b", "", 1, 1, false}, eff{"c", "", 1, 2, false},
				eff{"d", "", 1, 3, false}),
			want: "Ordered: 2 primary members (weighted), 2 fallbacks in 2 tiers; default recovery",
		},
		{
			name: "primaries of equal weight, one fallback",
			d:    detailOf(pool, nil, eff{"a", "", 2, 1, false}, eff{"b", "", 2, 1, false}, eff{"c", "", 1, 2, false}),
			want: "Ordered: 2 primary members (equal weights), 1 fallback; default recovery",
		},
		{
			name: "one member on",
			d:    detailOf(pool, nil, eff{"sweden", "eu-north", 1, 1, false}, eff{"france", "eu-west", 2, 1, true}),
			want: "One member takes every call: sweden in eu-north; 1 member off; default recovery",
		},
		{
			name: "every member off",
			d:    detailOf(pool, nil, eff{"a", "", 1, 1, true}, eff{"b", "", 1, 1, true}),
			want: "No member can take a call; 2 members off; default recovery",
		},
		{
			name: "members outside the allowed regions, one without a region",
			d: detailOf(pool, &adminv1.ProviderSpec{AllowedRegions: []string{"eu-*", "us-east"}},
				eff{"a", "eu-west", 1, 1, false}, eff{"b", "ap-south", 1, 1, false}, eff{"c", "", 1, 1, false}),
			want: "One member takes every call: a in eu-west, only in eu-*, us-east; 2 members outside the allowed regions; default recovery",
		},
		{
			name: "a plain record outside its allowed regions",
			d:    detailOf(plain, &adminv1.ProviderSpec{AllowedRegions: []string{"eu-west"}}, eff{"primary", "us", 1, 1, false}),
			want: "No endpoint can take a call, only in eu-west; 1 endpoint outside the allowed regions; default recovery",
		},
		{
			name: "recovery: each setting off its default, in field order",
			d: detailOf(plain, &adminv1.ProviderSpec{Recovery: &configv1.Recovery{
				MaxAttempts: 3, CallDeadline: sec(600), AttemptDeadline: sec(0), CooldownBase: sec(10), CooldownMax: sec(7200), MaxWait: sec(0),
			}}, eff{"primary", "", 1, 1, false}),
			want: "One endpoint; recovery overridden: max attempts 3, attempt deadline off, cooldown max 2h0m0s",
		},
		{
			name: "recovery: the defaults set explicitly are the defaults",
			d: detailOf(plain, &adminv1.ProviderSpec{Recovery: &configv1.Recovery{
				MaxAttempts: 8, CallDeadline: sec(600), AttemptDeadline: sec(120), CooldownBase: sec(10), CooldownMax: sec(3600),
			}}, eff{"primary", "", 1, 1, false}),
			want: "One endpoint; default recovery",
		},
		{
			name: "recovery: a zero duration that does not disable means the default",
			d: detailOf(plain, &adminv1.ProviderSpec{Recovery: &configv1.Recovery{CallDeadline: sec(0), CooldownBase: sec(5)}},
				eff{"primary", "", 1, 1, false}),
			want: "One endpoint; recovery overridden: cooldown base 5s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := RoutingSummary(tt.d); got != tt.want {
				t.Errorf("RoutingSummary =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
