package gateway_test

import (
	"net/http"
	"testing"
	"time"
)

// An answer carries the edge's own Date header (the cached one), in HTTP's
// format and for the current second, like net/http's.
func TestAnswerDate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pool(t, "a"))
	for range 3 {
		before := time.Now().Truncate(time.Second)
		res := h.post("/v1/chat/completions", chatBody)
		after := time.Now()
		if res.status != 200 {
			t.Fatalf("status %d", res.status)
		}
		if n := len(res.header.Values("Date")); n != 1 {
			t.Fatalf("%d Date headers", n)
		}
		d, err := http.ParseTime(res.header.Get("Date"))
		if err != nil {
			t.Fatalf("Date %q: %v", res.header.Get("Date"), err)
		}
		if d.Before(before) || d.After(after) {
			t.Errorf("Date %v outside [%v, %v]", d, before, after)
		}
	}
}
