package distrib

import (
	"testing"
	"time"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// R-FMT-6: a call's row notes the serving member's wire format and whether
// the call was translated; a format the control plane does not know is
// stored as none rather than failing the batch.
func TestCallRowNotesMemberFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format     string
		translated bool
		want       string
	}{
		{"gemini", true, "gemini"},
		{"openai", false, "openai"},
		{"", false, ""},
		{"made-up\x00format", true, ""},
	} {
		r := &telemetryv1.CallRecord{CallId: "c1", TenantId: "00000000-0000-0000-0000-000000000001",
			MemberFormat: tc.format, Translated: tc.translated}
		row, err := toRow(r, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if row.memberFormat != tc.want || row.translated != tc.translated {
			t.Errorf("%q: row has %q translated %v", tc.format, row.memberFormat, row.translated)
		}
		var cols callColumns
		cols.grow(1, 0)
		cols.add(&row)
		if len(cols.MemberFormat) != 1 || cols.MemberFormat[0] != tc.want || cols.Translated[0] != tc.translated {
			t.Errorf("%q: columns %v %v", tc.format, cols.MemberFormat, cols.Translated)
		}
	}
}
