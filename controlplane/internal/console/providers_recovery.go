package console

import (
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/web"
)

// A record's recovery settings (spec.recovery.*, weir.config.v1.Recovery):
// max attempts and the five durations. An empty input is "not set", the
// default the edge applies (shown as the placeholder). Durations are typed
// as Go durations or plain seconds and converted exactly: a value finer
// than a nanosecond is refused, never rounded, and the API refuses what is
// not whole milliseconds (the unit they are stored in), negative values and
// a cooldown base above the cooldown max.

// recoveryDurations are Recovery's duration fields, in form order.
var recoveryDurations = []string{"call_deadline", "attempt_deadline", "cooldown_base", "cooldown_max", "max_wait"}

// recoveryInputs are the recovery inputs' names.
func recoveryInputs() []string {
	out := []string{"spec.recovery", "spec.recovery.max_attempts"}
	for _, f := range recoveryDurations {
		out = append(out, "spec.recovery."+f)
	}
	return out
}

func recoveryFormFrom(r *http.Request) web.RecoveryForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue("spec.recovery." + k)) }
	return web.RecoveryForm{
		MaxAttempts: v("max_attempts"), CallDeadline: v("call_deadline"), AttemptDeadline: v("attempt_deadline"),
		CooldownBase: v("cooldown_base"), CooldownMax: v("cooldown_max"), MaxWait: v("max_wait"),
	}
}

func recoveryFormOf(rec *configv1.Recovery) web.RecoveryForm {
	f := web.RecoveryForm{
		CallDeadline: durationText(rec.GetCallDeadline()), AttemptDeadline: durationText(rec.GetAttemptDeadline()),
		CooldownBase: durationText(rec.GetCooldownBase()), CooldownMax: durationText(rec.GetCooldownMax()),
		MaxWait: durationText(rec.GetMaxWait()),
	}
	if n := rec.GetMaxAttempts(); n != 0 {
		f.MaxAttempts = strconv.FormatUint(uint64(n), 10)
	}
	return f
}

// recoveryOf is the Recovery of the recovery inputs; nil when none is set.
func recoveryOf(f web.RecoveryForm, local *problemSet) *configv1.Recovery {
	out := &configv1.Recovery{}
	set := false
	if f.MaxAttempts != "" {
		n, err := strconv.ParseUint(f.MaxAttempts, 10, 32)
		switch {
		case err != nil && strings.Trim(f.MaxAttempts, "0123456789") == "":
			local.add("spec.recovery.max_attempts", fmt.Sprintf("%s is too large", f.MaxAttempts))
		case err != nil:
			local.add("spec.recovery.max_attempts", fmt.Sprintf("%q is not a whole number such as 8", f.MaxAttempts))
		default:
			out.MaxAttempts = uint32(n)
			set = set || n != 0
		}
	}
	for _, d := range []struct {
		name, v string
		dst     **durationpb.Duration
	}{
		{"call_deadline", f.CallDeadline, &out.CallDeadline}, {"attempt_deadline", f.AttemptDeadline, &out.AttemptDeadline},
		{"cooldown_base", f.CooldownBase, &out.CooldownBase}, {"cooldown_max", f.CooldownMax, &out.CooldownMax},
		{"max_wait", f.MaxWait, &out.MaxWait},
	} {
		if d.v == "" {
			continue
		}
		x, err := parseDuration(d.v)
		if err != nil {
			local.add("spec.recovery."+d.name, err.Error())
			continue
		}
		*d.dst = durationpb.New(x)
		set = true
	}
	if !set {
		return nil
	}
	return out
}

// recoveryChanged are the update mask paths (recovery.<field>) of the
// recovery fields that differ between a and b.
func recoveryChanged(a, b *configv1.Recovery) []string {
	var out []string
	if a.GetMaxAttempts() != b.GetMaxAttempts() {
		out = append(out, "recovery.max_attempts")
	}
	for _, d := range []struct {
		name string
		x, y *durationpb.Duration
	}{
		{"call_deadline", a.GetCallDeadline(), b.GetCallDeadline()}, {"attempt_deadline", a.GetAttemptDeadline(), b.GetAttemptDeadline()},
		{"cooldown_base", a.GetCooldownBase(), b.GetCooldownBase()}, {"cooldown_max", a.GetCooldownMax(), b.GetCooldownMax()},
		{"max_wait", a.GetMaxWait(), b.GetMaxWait()},
	} {
		if !durationEqual(d.x, d.y) {
			out = append(out, "recovery."+d.name)
		}
	}
	return out
}

// durationEqual: both unset, or both set to the same value (a set zero is
// not unset: a zero attempt_deadline disables it).
func durationEqual(x, y *durationpb.Duration) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return x.GetSeconds() == y.GetSeconds() && x.GetNanos() == y.GetNanos()
}

// recoveryText prints the recovery settings set, "defaults" when none is.
func recoveryText(r *configv1.Recovery) string {
	var parts []string
	if n := r.GetMaxAttempts(); n != 0 {
		parts = append(parts, fmt.Sprintf("max attempts %d", n))
	}
	for _, d := range []struct {
		name string
		v    *durationpb.Duration
	}{
		{"call deadline", r.GetCallDeadline()}, {"attempt deadline", r.GetAttemptDeadline()}, {"cooldown base", r.GetCooldownBase()},
		{"cooldown max", r.GetCooldownMax()}, {"max wait", r.GetMaxWait()},
	} {
		if d.v != nil {
			parts = append(parts, d.name+" "+durationText(d.v))
		}
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, ", ")
}

// durationText shows a duration so that parseDuration reads it back
// exactly: "90s" as "1m30s", "1h", "1.5s", "250ms"; "" when unset.
func durationText(d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	x := d.AsDuration()
	if x == 0 {
		return "0s"
	}
	if x%time.Second != 0 || x < 0 {
		return x.String()
	}
	var b strings.Builder
	h, m, s := x/time.Hour, (x%time.Hour)/time.Minute, (x%time.Minute)/time.Second
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if s > 0 {
		fmt.Fprintf(&b, "%ds", s)
	}
	return b.String()
}

var (
	plainSeconds = regexp.MustCompile(`^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)$`)
	goDuration   = regexp.MustCompile(`^([+-]?)((?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+)$`)
	durationPart = regexp.MustCompile(`([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)`)
)

var durationUnits = map[string]int64{
	"ns": 1, "us": int64(time.Microsecond), "µs": int64(time.Microsecond), "μs": int64(time.Microsecond),
	"ms": int64(time.Millisecond), "s": int64(time.Second), "m": int64(time.Minute), "h": int64(time.Hour),
}

// parseDuration reads a Go duration ("1m30s", "1.5h", "250ms") or plain
// seconds ("90", "1.5"), exactly: unlike time.ParseDuration it never drops
// digits below a nanosecond, it refuses them. A sign is read (the API
// refuses negative values with its own message).
func parseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	sign, body := "", ""
	var parts [][]string
	if m := plainSeconds.FindStringSubmatch(in); m != nil {
		sign, body = m[1], m[2]
		parts = [][]string{{body + "s", body, "s"}}
	} else if m := goDuration.FindStringSubmatch(in); m != nil {
		sign, body = m[1], m[2]
		parts = durationPart.FindAllStringSubmatch(body, -1)
	} else {
		return 0, fmt.Errorf("%q is not a duration: give a Go duration such as 90s, 2m30s or 250ms, or plain seconds such as 90", s)
	}
	total := new(big.Rat)
	for _, p := range parts {
		v, ok := new(big.Rat).SetString(p[1])
		if !ok {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		total.Add(total, v.Mul(v, new(big.Rat).SetInt64(durationUnits[p[2]])))
	}
	if !total.IsInt() {
		return 0, fmt.Errorf("%q is finer than a nanosecond: give whole milliseconds", s)
	}
	n := total.Num()
	if !n.IsInt64() {
		return 0, fmt.Errorf("%q is too long", s)
	}
	x := time.Duration(n.Int64())
	if sign == "-" {
		x = -x
	}
	return x, nil
}
