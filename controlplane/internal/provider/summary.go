package provider

import (
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing"
)

// RoutingSummary says in one line how the edges route over the record a
// ProviderDetail describes (ProviderDetail.routing_summary), from its
// members as resolved (EffectiveMember) and the record's allowed regions
// and recovery, in ROUTING.md's terms:
//
//   - how calls spread over the members that can take them (on, and inside
//     the allowed regions, R-ELIG-1, R-ELIG-3): "One endpoint in eu-west"
//     for a plain record; for a pool one member, or "Evenly across N
//     members" / "Weighted across N members" when all are in one tier, else
//     "Ordered: P primary members [(weighted)|(equal weights)], F fallbacks
//     [in T tiers]": members of the lowest order are tried first, weighted
//     among equals, the next tier only when the one before has failed or is
//     cooling (R-ORDER-1, R-ORDER-3);
//   - ", only in <allowed regions>" when the record narrows its members;
//   - "; N members off", and "; N members outside the allowed regions"
//     (a member without a region is outside any list);
//   - "; default recovery", or "; recovery overridden: " and each setting
//     whose effective value differs from ROUTING.md's default.
//
// For example "Weighted across 2 members, only in eu-*; 1 member off;
// recovery overridden: max wait 3s". It reads no secret, base URL or
// account, so it is the same for a redacted shared record.
func RoutingSummary(d *adminv1.ProviderDetail) string {
	spec := d.GetRecord().GetSpec()
	allowed := spec.GetAllowedRegions()
	noun := "member"
	if d.GetRecord().GetKind() == adminv1.RecordKind_RECORD_KIND_PLAIN {
		noun = "endpoint"
	}
	var usable []*adminv1.MemberDetail
	off, outside := 0, 0
	for _, m := range d.GetMembers() {
		switch e := m.GetEffective(); {
		case e.GetOff():
			off++
		case len(allowed) > 0 && !regionMatches(e.GetRegion(), allowed):
			outside++
		default:
			usable = append(usable, m)
		}
	}
	first := spreadText(noun, usable)
	if len(allowed) > 0 {
		first += ", only in " + strings.Join(allowed, ", ")
	}
	parts := []string{first}
	if off > 0 {
		parts = append(parts, count(off, noun)+" off")
	}
	if outside > 0 {
		parts = append(parts, count(outside, noun)+" outside the allowed regions")
	}
	return strings.Join(append(parts, recoverySummary(spec.GetRecovery())), "; ")
}

// spreadText says how calls spread over the members that can take them
// (noun is "endpoint" for a plain record's own).
func spreadText(noun string, usable []*adminv1.MemberDetail) string {
	switch len(usable) {
	case 0:
		return "No " + noun + " can take a call"
	case 1:
		e := usable[0].GetEffective()
		s := "One " + noun
		if noun == "member" {
			s += " takes every call: " + usable[0].GetMember().GetName()
		}
		if e.GetRegion() != "" {
			s += " in " + e.GetRegion()
		}
		return s
	}
	lowest := usable[0].GetEffective().GetOrder()
	tiers := map[uint32]bool{}
	for _, m := range usable {
		lowest = min(lowest, m.GetEffective().GetOrder())
		tiers[m.GetEffective().GetOrder()] = true
	}
	var primary []*adminv1.MemberDetail
	for _, m := range usable {
		if m.GetEffective().GetOrder() == lowest {
			primary = append(primary, m)
		}
	}
	if len(tiers) == 1 {
		if weighted(primary) {
			return "Weighted across " + count(len(usable), noun)
		}
		return "Evenly across " + count(len(usable), noun)
	}
	s := "Ordered: " + count(len(primary), "primary "+noun)
	switch {
	case len(primary) > 1 && weighted(primary):
		s += " (weighted)"
	case len(primary) > 1:
		s += " (equal weights)"
	}
	s += ", " + count(len(usable)-len(primary), "fallback")
	if len(tiers) > 2 {
		s += " in " + strconv.Itoa(len(tiers)-1) + " tiers"
	}
	return s
}

// weighted reports whether the members of one tier have different
// weights, so that calls spread over them in proportion (R-ORDER-3)
// rather than evenly.
func weighted(tier []*adminv1.MemberDetail) bool {
	for _, m := range tier {
		if m.GetEffective().GetWeight() != tier[0].GetEffective().GetWeight() {
			return true
		}
	}
	return false
}

// count is "1 member", "2 members".
func count(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return strconv.Itoa(n) + " " + noun
}

// recoverySummary names each recovery setting whose effective value (the
// edge's, unset meaning ROUTING.md's default) is not the default, or says
// "default recovery".
func recoverySummary(r *configv1.Recovery) string {
	def := routing.DefaultRecovery()
	var set []string
	if n := r.GetMaxAttempts(); n > 0 && int(n) != def.MaxAttempts {
		set = append(set, "max attempts "+strconv.FormatUint(uint64(n), 10))
	}
	for _, d := range []struct {
		name         string
		value        *durationpb.Duration
		def          time.Duration
		zeroDisables bool
	}{
		{"call deadline", r.GetCallDeadline(), def.CallDeadline, false},
		{"attempt deadline", r.GetAttemptDeadline(), def.AttemptDeadline, true},
		{"cooldown base", r.GetCooldownBase(), def.CooldownBase, false},
		{"cooldown max", r.GetCooldownMax(), def.CooldownMax, false},
		{"max wait", r.GetMaxWait(), def.MaxWait, false},
	} {
		v := d.value.AsDuration()
		switch {
		case d.value == nil || v == d.def:
		case v > 0:
			set = append(set, d.name+" "+v.String())
		case v == 0 && d.zeroDisables:
			set = append(set, d.name+" off")
		}
	}
	if len(set) == 0 {
		return "default recovery"
	}
	return "recovery overridden: " + strings.Join(set, ", ")
}
