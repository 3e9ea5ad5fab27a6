package gateway

import (
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
)

// FailureKindProto is the telemetry enum of a routing failure kind, as call
// records carry it; member views (distribution) use the same mapping.
func FailureKindProto(k routing.FailureKind) telemetryv1.FailureKind { return failureKind(k) }
