package fakeprovider

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Limits are per-minute capacities of the server's token buckets. A zero
// field is unlimited, and an unlimited dimension sends no rate-limit headers.
// Each bucket holds one minute's worth and refills continuously, so a full
// bucket admits a burst of its whole limit and then one unit every
// minute/limit. A request is admitted only when every bucket holds what it
// needs: one request, its estimated input tokens (without cache reads on
// Anthropic and Bedrock, as Anthropic counts them) and the output tokens it
// will produce. Errors and scripted faults take nothing.
type Limits struct {
	// RPM is requests per minute.
	RPM int
	// InputTPM is input (prompt) tokens per minute.
	InputTPM int
	// OutputTPM is output (completion) tokens per minute.
	OutputTPM int
}

// dimension names one bucket.
type dimension int

const (
	dimRequests dimension = iota
	dimInput
	dimOutput
	numDims
)

// bucket is one token bucket; a zero limit means unlimited.
type bucket struct {
	limit float64
	level float64
}

// rate returns the refill per second.
func (b *bucket) rate() float64 { return b.limit / 60 }

// limiter is the server's set of buckets. It has no lock of its own: the
// Server's mutex guards it.
type limiter struct {
	b    [numDims]bucket
	last time.Time
}

// reset replaces the limits and fills every bucket.
func (l *limiter) reset(lim Limits, now time.Time) {
	for d, v := range [numDims]int{lim.RPM, lim.InputTPM, lim.OutputTPM} {
		l.b[d] = bucket{limit: float64(max(v, 0)), level: float64(max(v, 0))}
	}
	l.last = now
}

// refill adds what the time since the last refill earned. A clock that went
// backwards earns nothing.
func (l *limiter) refill(now time.Time) {
	dt := now.Sub(l.last).Seconds()
	if dt <= 0 {
		return
	}
	for d := range l.b {
		b := &l.b[d]
		if b.limit > 0 {
			b.level = math.Min(b.limit, b.level+dt*b.rate())
		}
	}
	l.last = now
}

// take admits one request of in input and out output tokens, or says which
// bucket refused it and how long until that bucket holds enough. A request
// larger than a whole bucket is refused with the time until that bucket is
// full.
func (l *limiter) take(now time.Time, in, out int) (ok bool, refused dimension, wait time.Duration) {
	l.refill(now)
	need := [numDims]float64{1, float64(in), float64(out)}
	refused = -1
	for d := range l.b {
		b := &l.b[d]
		if b.limit <= 0 || need[d] <= b.level {
			continue
		}
		// A request larger than the whole bucket can never pass; it is told
		// to come back when the bucket is full, as real providers do.
		short := math.Min(need[d], b.limit) - b.level
		w := time.Duration(short / b.rate() * float64(time.Second))
		if refused < 0 || w > wait {
			refused, wait = dimension(d), w
		}
	}
	if refused >= 0 {
		return false, refused, max(wait, time.Millisecond)
	}
	for d := range l.b {
		if l.b[d].limit > 0 {
			l.b[d].level -= need[d]
		}
	}
	return true, 0, 0
}

// dimView is what the headers say about one bucket.
type dimView struct {
	limited   bool
	limit     int
	remaining int
	reset     time.Duration // until the bucket is full again
}

// view returns the state of every bucket at now.
func (l *limiter) view(now time.Time) [numDims]dimView {
	l.refill(now)
	var v [numDims]dimView
	for d, b := range l.b {
		if b.limit <= 0 {
			continue
		}
		v[d] = dimView{
			limited:   true,
			limit:     int(b.limit),
			remaining: int(math.Floor(b.level)),
			reset:     time.Duration((b.limit - b.level) / b.rate() * float64(time.Second)),
		}
	}
	return v
}

// tightestTokens returns the token bucket with the smallest remaining share,
// which both OpenAI's "tokens" and Anthropic's "tokens" headers report.
func tightestTokens(v [numDims]dimView) (dimView, bool) {
	best, found := dimView{}, false
	for _, d := range []dimension{dimInput, dimOutput} {
		if !v[d].limited {
			continue
		}
		if !found || float64(v[d].remaining)/float64(v[d].limit) < float64(best.remaining)/float64(best.limit) {
			best, found = v[d], true
		}
	}
	return best, found
}

// formatOpenAIReset formats a reset the way OpenAI does: a Go-style
// duration such as "6m0s", "1s" or "20ms", rounded up to the millisecond.
func formatOpenAIReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return ceilDur(d, time.Millisecond).String()
}

// ceilDur rounds d up to a multiple of unit.
func ceilDur(d, unit time.Duration) time.Duration {
	if r := d % unit; r != 0 {
		d += unit - r
	}
	return d
}

// setOpenAIRateHeaders writes x-ratelimit-{limit,remaining,reset}-{requests,tokens}.
func setOpenAIRateHeaders(h http.Header, v [numDims]dimView) {
	set := func(suffix string, d dimView) {
		h.Set("x-ratelimit-limit-"+suffix, strconv.Itoa(d.limit))
		h.Set("x-ratelimit-remaining-"+suffix, strconv.Itoa(d.remaining))
		h.Set("x-ratelimit-reset-"+suffix, formatOpenAIReset(d.reset))
	}
	if v[dimRequests].limited {
		set("requests", v[dimRequests])
	}
	if t, ok := tightestTokens(v); ok {
		set("tokens", t)
	}
}

// setAnthropicRateHeaders writes
// anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-{limit,remaining,reset},
// the reset being the RFC 3339 time the bucket is full again, rounded up to
// the second.
func setAnthropicRateHeaders(h http.Header, v [numDims]dimView, now time.Time) {
	set := func(name string, d dimView) {
		h.Set("anthropic-ratelimit-"+name+"-limit", strconv.Itoa(d.limit))
		h.Set("anthropic-ratelimit-"+name+"-remaining", strconv.Itoa(d.remaining))
		at := now.Add(d.reset).UTC()
		if at.Nanosecond() != 0 {
			at = at.Truncate(time.Second).Add(time.Second)
		}
		h.Set("anthropic-ratelimit-"+name+"-reset", at.Format(time.RFC3339))
	}
	if v[dimRequests].limited {
		set("requests", v[dimRequests])
	}
	if v[dimInput].limited {
		set("input-tokens", v[dimInput])
	}
	if v[dimOutput].limited {
		set("output-tokens", v[dimOutput])
	}
	if t, ok := tightestTokens(v); ok {
		set("tokens", t)
	}
}

// retryAfterSeconds formats a wait as whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64(ceilDur(d, time.Second)/time.Second), 1), 10)
}

// retryAfterMillis formats a wait as whole milliseconds, rounded up.
func retryAfterMillis(d time.Duration) string {
	return strconv.FormatInt(max(int64(ceilDur(d, time.Millisecond)/time.Millisecond), 0), 10)
}
