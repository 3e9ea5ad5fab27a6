package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// recoveryOf is record tenant/name's stored recovery settings.
func recoveryOf(t *testing.T, h *harness, tenant, name string) *configv1.Recovery {
	t.Helper()
	return getProvider(t, h, tenant, name).GetRecord().GetSpec().GetRecovery()
}

func checkDuration(t *testing.T, what string, got *durationpb.Duration, want time.Duration) {
	t.Helper()
	if got == nil || got.AsDuration() != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

var recoveryPaths = []string{"max_attempts", "call_deadline", "attempt_deadline", "cooldown_base", "cooldown_max", "max_wait"}

// TestRecordRecovery edits a record's recovery settings through its
// settings form: each set and cleared (the effect read back through the
// API), only the changed fields sent, a malformed duration refused next to
// its input, and values the API refuses shown next to theirs.
func TestRecordRecovery(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, tadmA)

	// Empty inputs: the defaults, shown as placeholders; the hint says
	// how durations are typed.
	doc := b.page(t, "/console/providers/p/edit", http.StatusOK)
	find(t, doc, "recovery-fields")
	for path, def := range map[string]string{
		"max_attempts": "8", "call_deadline": "600s", "attempt_deadline": "120s", "cooldown_base": "10s", "cooldown_max": "1h", "max_wait": "0s",
	} {
		in := find(t, doc, "input-spec-recovery-"+path)
		if attr(in, "name") != "spec.recovery."+path || attr(in, "value") != "" || attr(in, "placeholder") != "default: "+def {
			t.Errorf("input %s: %v", path, in.Attr)
		}
		hint := text(find(t, doc, "field-spec-recovery-"+path))
		if !strings.Contains(hint, "Empty: "+def) || (path != "max_attempts" && !strings.Contains(hint, "plain seconds")) {
			t.Errorf("hint of %s: %q", path, hint)
		}
	}
	if got := text(find(t, b.page(t, "/console/providers/p", http.StatusOK), "setting-recovery")); got != "defaults" {
		t.Errorf("recovery shown %q", got)
	}

	// Every field set at once: Go durations and plain seconds, and a zero
	// attempt deadline (which disables it, unlike an empty one).
	doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals := formValues(t, doc, "record-edit-form")
	vals.Set("spec.recovery.max_attempts", "3")
	vals.Set("spec.recovery.call_deadline", "5m")
	vals.Set("spec.recovery.attempt_deadline", "0")
	vals.Set("spec.recovery.cooldown_base", "2.5")
	vals.Set("spec.recovery.cooldown_max", "1h30m")
	vals.Set("spec.recovery.max_wait", "1500ms")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	if got, want := text(find(t, doc, "flash-ok")), "(recovery.max_attempts, recovery.call_deadline, recovery.attempt_deadline, recovery.cooldown_base, recovery.cooldown_max, recovery.max_wait)"; !strings.Contains(got, want) {
		t.Errorf("flash %q, want the paths %s", got, want)
	}
	rec := recoveryOf(t, h, "a", "p")
	if rec.GetMaxAttempts() != 3 {
		t.Errorf("max attempts %d", rec.GetMaxAttempts())
	}
	checkDuration(t, "call deadline", rec.GetCallDeadline(), 5*time.Minute)
	checkDuration(t, "attempt deadline", rec.GetAttemptDeadline(), 0)
	checkDuration(t, "cooldown base", rec.GetCooldownBase(), 2500*time.Millisecond)
	checkDuration(t, "cooldown max", rec.GetCooldownMax(), 90*time.Minute)
	checkDuration(t, "max wait", rec.GetMaxWait(), 1500*time.Millisecond)
	if got := text(find(t, doc, "setting-recovery")); got != "max attempts 3, call deadline 5m, attempt deadline 0s, cooldown base 2.5s, cooldown max 1h30m, max wait 1.5s" {
		t.Errorf("recovery shown %q", got)
	}

	// The form shows them back; saved unchanged, nothing is sent.
	doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals = formValues(t, doc, "record-edit-form")
	for path, want := range map[string]string{
		"max_attempts": "3", "call_deadline": "5m", "attempt_deadline": "0s", "cooldown_base": "2.5s", "cooldown_max": "1h30m", "max_wait": "1.5s",
	} {
		if got := vals.Get("spec.recovery." + path); got != want {
			t.Errorf("%s shown as %q, want %q", path, got, want)
		}
	}
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-info")); !strings.Contains(got, "nothing changed") {
		t.Errorf("unchanged form: flash %q", got)
	}

	// One field changed: only its path is sent.
	vals.Set("spec.recovery.max_wait", "20")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "(recovery.max_wait)") {
		t.Errorf("flash %q", got)
	}
	checkDuration(t, "max wait", recoveryOf(t, h, "a", "p").GetMaxWait(), 20*time.Second)

	// Each field cleared on its own: back to "not set" (an empty attempt
	// deadline is the default again, not a disabled one).
	for i, path := range recoveryPaths {
		doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
		vals = formValues(t, doc, "record-edit-form")
		vals.Set("spec.recovery."+path, "")
		doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
		if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "(recovery."+path+")") {
			t.Errorf("clearing %s: flash %q", path, got)
		}
		rec := recoveryOf(t, h, "a", "p")
		set := map[string]bool{
			"max_attempts": rec.GetMaxAttempts() != 0, "call_deadline": rec.GetCallDeadline() != nil, "attempt_deadline": rec.GetAttemptDeadline() != nil,
			"cooldown_base": rec.GetCooldownBase() != nil, "cooldown_max": rec.GetCooldownMax() != nil, "max_wait": rec.GetMaxWait() != nil,
		}
		for j, p := range recoveryPaths {
			if set[p] != (j > i) {
				t.Errorf("after clearing %s: %s set = %v (%v)", path, p, set[p], rec)
			}
		}
	}
	if got := text(find(t, b.page(t, "/console/providers/p", http.StatusOK), "setting-recovery")); got != "defaults" {
		t.Errorf("recovery shown %q after clearing", got)
	}

	// Malformed durations are refused next to their inputs, before the
	// API; values kept, nothing saved.
	rev := getProvider(t, h, "a", "p").GetRecord().GetRevision()
	doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("spec.recovery.max_attempts", "4")
	vals.Set("spec.recovery.call_deadline", "5 minutes")
	vals.Set("spec.recovery.cooldown_base", "1.0000000001")
	vals.Set("spec.recovery.max_wait", "10s")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.recovery.call_deadline", "not a duration")
	checkInvalid(t, doc, "spec.recovery.cooldown_base", "finer than a nanosecond")
	for path, want := range map[string]string{"max_attempts": "4", "call_deadline": "5 minutes", "cooldown_base": "1.0000000001", "max_wait": "10s"} {
		if got := attr(find(t, doc, "input-spec-recovery-"+path), "value"); got != want {
			t.Errorf("%s kept as %q, want %q", path, got, want)
		}
	}
	if attr(find(t, doc, "input-spec-recovery-max_wait"), "aria-invalid") != "" {
		t.Error("a valid input is marked invalid")
	}
	if d := getProvider(t, h, "a", "p"); d.GetRecord().GetRevision() != rev || d.GetRecord().GetSpec().GetRecovery() != nil {
		t.Errorf("a refused form saved: revision %d→%d, recovery %v", rev, d.GetRecord().GetRevision(), d.GetRecord().GetSpec().GetRecovery())
	}

	// Values the API refuses, each next to its input, values kept: a
	// cooldown base above the default cooldown max, more attempts than it
	// stores, a negative wait, and a deadline below a millisecond.
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("spec.recovery.call_deadline", "1.5ms")
	vals.Set("spec.recovery.cooldown_base", "2h")
	vals.Set("spec.recovery.max_attempts", "3000000000")
	vals.Set("spec.recovery.max_wait", "-5s")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.recovery.cooldown_base", "above cooldown_max")
	checkInvalid(t, doc, "spec.recovery.max_attempts", "at most")
	checkInvalid(t, doc, "spec.recovery.max_wait", "negative")
	checkInvalid(t, doc, "spec.recovery.call_deadline", "milliseconds")
	if got := attr(find(t, doc, "input-spec-recovery-cooldown_base"), "value"); got != "2h" {
		t.Errorf("cooldown base kept as %q", got)
	}
	if d := getProvider(t, h, "a", "p"); d.GetRecord().GetRevision() != rev || d.GetRecord().GetSpec().GetRecovery() != nil {
		t.Errorf("a refused form saved: %v", d.GetRecord().GetSpec().GetRecovery())
	}

	// Set with a cooldown max that allows it, it is saved.
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("spec.recovery.call_deadline", "")
	vals.Set("spec.recovery.max_attempts", "")
	vals.Set("spec.recovery.max_wait", "")
	vals.Set("spec.recovery.cooldown_max", "3h")
	b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	rec = recoveryOf(t, h, "a", "p")
	checkDuration(t, "cooldown base", rec.GetCooldownBase(), 2*time.Hour)
	checkDuration(t, "cooldown max", rec.GetCooldownMax(), 3*time.Hour)
}

// TestProvidersCreateRecovery: the create form takes recovery settings,
// and refuses a malformed one next to its input.
func TestProvidersCreateRecovery(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, padmA)
	doc := b.page(t, "/console/providers", http.StatusOK)
	if got := attr(find(t, doc, "input-spec-recovery-call_deadline"), "placeholder"); got != "default: 600s" {
		t.Errorf("placeholder %q", got)
	}
	vals := formValues(t, doc, "provider-create-form")
	vals.Set("name", "plain1")
	vals.Set("kind", "plain")
	vals.Set("preset", "vllm")
	vals.Set("spec.models", "x")
	vals.Set("spec.base_url", "https://plain.example.com/v1")
	vals.Set("spec.recovery.max_wait", "soon")
	doc = b.submit(t, "/console/providers", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.recovery.max_wait", "not a duration")

	vals = formValues(t, doc, "provider-create-form")
	vals.Set("spec.recovery.max_wait", "15")
	vals.Set("spec.recovery.cooldown_base", "2h")
	doc = b.submit(t, "/console/providers", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.recovery.cooldown_base", "above cooldown_max")

	vals = formValues(t, doc, "provider-create-form")
	vals.Set("spec.recovery.cooldown_base", "")
	vals.Set("spec.recovery.max_attempts", "2")
	b.submit(t, "/console/providers", vals, http.StatusOK)
	rec := recoveryOf(t, h, "a", "plain1")
	if rec.GetMaxAttempts() != 2 || rec.GetCooldownBase() != nil || rec.GetCallDeadline() != nil {
		t.Errorf("recovery %v", rec)
	}
	checkDuration(t, "max wait", rec.GetMaxWait(), 15*time.Second)
}
