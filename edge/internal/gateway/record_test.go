package gateway_test

import (
	"strconv"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

type callRecord struct{ *telemetryv1.CallRecord }

// sent lists "member:status:outcome" of the attempts that went out.
func (r *callRecord) sent() []string {
	var out []string
	for _, a := range r.Attempts {
		if a.Outcome == telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED {
			continue
		}
		out = append(out, a.MemberName+":"+strconv.Itoa(int(a.Status))+":"+outcomeName(a.Outcome))
	}
	return out
}

func outcomeName(o telemetryv1.AttemptOutcome) string {
	switch o {
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED:
		return "answered"
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER:
		return "failed_over"
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED:
		return "failed"
	case telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED:
		return "skipped"
	}
	return "?"
}
