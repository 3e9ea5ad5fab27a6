package fakeprovider

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FaultKind says what a Fault does to a request.
type FaultKind int

// The kinds of Fault. Faults that answer (rate limits, quota, statuses,
// custom answers) do so before the key is checked and without touching the
// token buckets; SlowHeaders and Cut change an answer that is otherwise
// served as usual.
const (
	// FaultNone serves the request as usual.
	FaultNone FaultKind = iota
	// FaultRateLimit answers 429 with retry-after, and retry-after-ms too on
	// OpenAI and Azure paths, naming Fault.RetryAfter. On Gemini and Vertex
	// paths it is a per-minute RESOURCE_EXHAUSTED whose QuotaFailure names
	// GenerateRequestsPerMinutePerProjectPerModel and whose RetryInfo names
	// the wait, without headers.
	FaultRateLimit
	// FaultRateLimitMillis answers 429 with retry-after-ms only (Gemini and
	// Vertex: as FaultRateLimit).
	FaultRateLimitMillis
	// FaultRateLimitNoHint answers 429 naming no time at all (Gemini and
	// Vertex: a bare RESOURCE_EXHAUSTED without details).
	FaultRateLimitNoHint
	// FaultQuota refuses for money: OpenAI and Azure insufficient_quota as
	// 429, Anthropic's credit balance as 400, Bedrock's
	// ServiceQuotaExceededException as 400.
	FaultQuota
	// FaultStatus answers Fault.Status with the flavor's realistic body
	// (for example 529 overloaded_error on Anthropic, cf_bad_gateway on
	// OpenAI's 502, ThrottlingException on Bedrock's 429).
	FaultStatus
	// FaultModelNotReady answers Bedrock's ModelNotReadyException (429);
	// other flavors get their 503.
	FaultModelNotReady
	// FaultReset closes the connection with a TCP RST before the status
	// line.
	FaultReset
	// FaultSlowHeaders waits Fault.Delay before the status line, then
	// answers as usual.
	FaultSlowHeaders
	// FaultCut sends Fault.Events stream events (SSE events, or event-stream
	// frames on Bedrock) and then closes the connection without ending the
	// body. A non-streaming answer is cut after half its body.
	FaultCut
	// FaultHang never answers; the request ends when its client goes away
	// or the server closes.
	FaultHang
	// FaultCustom answers Fault.Status with Fault.Header and Fault.Body.
	FaultCustom
	// FaultDailyQuota answers 429 for a spent per-day allowance, naming no
	// time to wait: Gemini and Vertex RESOURCE_EXHAUSTED with a QuotaFailure
	// whose quotaId is GenerateRequestsPerDayPerProjectPerModel-FreeTier;
	// OpenAI and Azure a requests-per-day rate limit; Anthropic a
	// rate_limit_error; Bedrock a ThrottlingException, each saying "per day".
	FaultDailyQuota
)

// String returns the kind's name.
func (k FaultKind) String() string {
	switch k {
	case FaultNone:
		return "none"
	case FaultRateLimit:
		return "rate-limit"
	case FaultRateLimitMillis:
		return "rate-limit-ms"
	case FaultRateLimitNoHint:
		return "rate-limit-no-hint"
	case FaultQuota:
		return "quota"
	case FaultStatus:
		return "status"
	case FaultModelNotReady:
		return "model-not-ready"
	case FaultReset:
		return "reset"
	case FaultSlowHeaders:
		return "slow-headers"
	case FaultCut:
		return "cut"
	case FaultHang:
		return "hang"
	case FaultCustom:
		return "custom"
	case FaultDailyQuota:
		return "daily-quota"
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// DefaultRetryAfter is the wait a rate-limit Fault names when its
// RetryAfter is zero.
const DefaultRetryAfter = time.Second

// Fault is one scripted misbehaviour. The zero Fault is FaultNone.
type Fault struct {
	Kind FaultKind
	// Status is the status of FaultStatus and FaultCustom.
	Status int
	// RetryAfter is the wait named by FaultRateLimit and
	// FaultRateLimitMillis (DefaultRetryAfter when zero).
	RetryAfter time.Duration
	// Delay is the wait of FaultSlowHeaders.
	Delay time.Duration
	// Events is how many stream events FaultCut sends before the cut.
	Events int
	// Header and Body are the answer of FaultCustom.
	Header http.Header
	Body   string
}

// RateLimited returns a 429 naming retryAfter in retry-after (whole seconds,
// rounded up) and, on OpenAI and Azure paths, retry-after-ms.
func RateLimited(retryAfter time.Duration) Fault {
	return Fault{Kind: FaultRateLimit, RetryAfter: retryAfter}
}

// RateLimitedMillis returns a 429 naming retryAfter in retry-after-ms only.
func RateLimitedMillis(retryAfter time.Duration) Fault {
	return Fault{Kind: FaultRateLimitMillis, RetryAfter: retryAfter}
}

// RateLimitedNoHint returns a 429 that names no time to wait.
func RateLimitedNoHint() Fault { return Fault{Kind: FaultRateLimitNoHint} }

// DailyQuotaExceeded returns a 429 for a spent per-day allowance (see
// FaultDailyQuota).
func DailyQuotaExceeded() Fault { return Fault{Kind: FaultDailyQuota} }

// QuotaExceeded returns the flavor's quota or credit refusal.
func QuotaExceeded() Fault { return Fault{Kind: FaultQuota} }

// Status returns an answer with the given status and the flavor's realistic
// body for it. Status(429) is a rate limit naming no time.
func Status(code int) Fault { return Fault{Kind: FaultStatus, Status: code} }

// ModelNotReady returns Bedrock's ModelNotReadyException.
func ModelNotReady() Fault { return Fault{Kind: FaultModelNotReady} }

// Reset returns a connection reset before the status line.
func Reset() Fault { return Fault{Kind: FaultReset} }

// SlowHeaders returns a usual answer whose status line comes after d.
func SlowHeaders(d time.Duration) Fault { return Fault{Kind: FaultSlowHeaders, Delay: d} }

// CutAfter returns an answer whose connection is closed after events stream
// events.
func CutAfter(events int) Fault { return Fault{Kind: FaultCut, Events: events} }

// Hang returns a request that is never answered.
func Hang() Fault { return Fault{Kind: FaultHang} }

// Custom returns an answer with exactly this status, these headers and this
// body (the server still adds its rate-limit headers).
func Custom(status int, header http.Header, body string) Fault {
	return Fault{Kind: FaultCustom, Status: status, Header: header, Body: body}
}

// String describes f in the syntax ParseFault reads (custom answers aside).
func (f Fault) String() string {
	switch f.Kind {
	case FaultNone:
		return "none"
	case FaultRateLimit:
		return "429:" + f.retryAfter().String()
	case FaultRateLimitMillis:
		return "429-ms:" + f.retryAfter().String()
	case FaultRateLimitNoHint:
		return "429-bare"
	case FaultQuota:
		return "quota"
	case FaultStatus:
		return strconv.Itoa(f.Status)
	case FaultModelNotReady:
		return "not-ready"
	case FaultReset:
		return "reset"
	case FaultSlowHeaders:
		return "slow:" + f.Delay.String()
	case FaultCut:
		return "cut:" + strconv.Itoa(f.Events)
	case FaultHang:
		return "hang"
	case FaultCustom:
		return "custom:" + strconv.Itoa(f.Status)
	case FaultDailyQuota:
		return "quota-day"
	}
	return f.Kind.String()
}

func (f Fault) retryAfter() time.Duration {
	if f.RetryAfter > 0 {
		return f.RetryAfter
	}
	return DefaultRetryAfter
}

// ParseFault reads a fault from text, as the fakeprovider binary's -fault
// flag takes it:
//
//	none | "" 	no fault
//	429[:D]   	rate limit with retry-after (and retry-after-ms), D defaulting to 1s
//	429-ms[:D]	rate limit with retry-after-ms only
//	429-bare  	rate limit naming no time
//	quota     	quota or credit refusal
//	quota-day 	per-day allowance spent (429 naming no time)
//	not-ready 	Bedrock ModelNotReadyException
//	NNN       	that status with the flavor's body (500, 502, 503, 504, 529, 401, 403, 404 …)
//	reset     	connection reset before the status line
//	slow:D    	status line after D
//	cut:N     	close after N stream events
//	hang      	never answer
func ParseFault(s string) (Fault, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	name, arg, hasArg := strings.Cut(s, ":")
	dur := func(def time.Duration) (time.Duration, error) {
		if !hasArg {
			return def, nil
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("fakeprovider: fault %q: bad duration %q", s, arg)
		}
		return d, nil
	}
	noArg := func(f Fault) (Fault, error) {
		if hasArg {
			return Fault{}, fmt.Errorf("fakeprovider: fault %q takes no argument", name)
		}
		return f, nil
	}
	switch name {
	case "", "none":
		return noArg(Fault{})
	case "429":
		d, err := dur(DefaultRetryAfter)
		return RateLimited(d), err
	case "429-ms":
		d, err := dur(DefaultRetryAfter)
		return RateLimitedMillis(d), err
	case "429-bare":
		return noArg(RateLimitedNoHint())
	case "quota":
		return noArg(QuotaExceeded())
	case "quota-day":
		return noArg(DailyQuotaExceeded())
	case "not-ready":
		return noArg(ModelNotReady())
	case "reset":
		return noArg(Reset())
	case "hang":
		return noArg(Hang())
	case "slow":
		if !hasArg {
			return Fault{}, fmt.Errorf("fakeprovider: fault slow needs a duration, as in slow:2s")
		}
		d, err := dur(0)
		return SlowHeaders(d), err
	case "cut":
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || n < 0 {
			return Fault{}, fmt.Errorf("fakeprovider: fault cut needs a count of events, as in cut:3")
		}
		return CutAfter(n), nil
	}
	code, err := strconv.Atoi(name)
	if err != nil || code < 200 || code > 599 {
		return Fault{}, fmt.Errorf("fakeprovider: unknown fault %q", s)
	}
	return noArg(Status(code))
}

// Enqueue appends faults to the queue. Each request that reaches a known
// path takes the first fault of the queue; when the queue is empty the
// sticky fault applies.
func (s *Server) Enqueue(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, faults...)
}

// SetSticky makes f apply to every request that finds the queue empty;
// Fault{} turns it off.
func (s *Server) SetSticky(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sticky = f
}

// ClearFaults empties the queue and turns the sticky fault off.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = nil
	s.sticky = Fault{}
}

// Pending returns how many queued faults are still to be played.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// nextFault takes the fault for one request.
func (s *Server) nextFault() Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		f := s.queue[0]
		s.queue[0] = Fault{}
		s.queue = s.queue[1:]
		return f
	}
	return s.sticky
}

// play applies f to the call. It returns true when the call is over (the
// fault answered, or the client went away while it waited).
func (c *call) play(f Fault) (over bool) {
	switch f.Kind {
	case FaultNone:
		return false
	case FaultRateLimit:
		h := c.w.Header()
		if !c.route.flavor.google() {
			h.Set("retry-after", retryAfterSeconds(f.retryAfter()))
		}
		if c.route.flavor == FlavorOpenAI || c.route.flavor == FlavorAzure {
			h.Set("retry-after-ms", retryAfterMillis(f.retryAfter()))
		}
		c.fail(apiErr{status: http.StatusTooManyRequests, kind: eRateLimit, wait: f.retryAfter()})
	case FaultRateLimitMillis:
		if !c.route.flavor.google() {
			c.w.Header().Set("retry-after-ms", retryAfterMillis(f.retryAfter()))
		}
		c.fail(apiErr{status: http.StatusTooManyRequests, kind: eRateLimit, wait: f.retryAfter()})
	case FaultRateLimitNoHint:
		c.fail(apiErr{status: http.StatusTooManyRequests, kind: eRateLimit})
	case FaultQuota:
		c.fail(apiErr{kind: eQuota})
	case FaultDailyQuota:
		c.fail(apiErr{status: http.StatusTooManyRequests, kind: eRateLimit, daily: true})
	case FaultStatus:
		c.fail(apiErr{status: f.Status, kind: kindForStatus(f.Status)})
	case FaultModelNotReady:
		c.fail(apiErr{kind: eModelNotReady})
	case FaultReset:
		c.reset()
	case FaultSlowHeaders:
		return !c.sleep(f.Delay)
	case FaultCut:
		c.cutAfter = max(f.Events, 0)
		return false
	case FaultHang:
		c.sleep(-1)
	case FaultCustom:
		for k, vs := range f.Header {
			for _, v := range vs {
				c.w.Header().Add(k, v)
			}
		}
		status := f.Status
		if status == 0 {
			status = http.StatusOK
		}
		c.writeHead(status, "")
		_, _ = c.w.Write([]byte(f.Body))
	}
	return true
}
