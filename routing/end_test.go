package routing

import (
	"testing"
	"time"
)

func TestFinalAnswers(t *testing.T) {
	t.Parallel()
	quota429 := answer{v: Verdict{Kind: KindQuotaSpent, Status: 429, AccountWide: true, Reason: "insufficient_quota"}}
	quota400 := answer{v: Verdict{Kind: KindQuotaSpent, Status: 400, AccountWide: true, Reason: "credit_balance"}}
	tests := []struct {
		name string
		// before sets member states before the call.
		before      func(st *States, r *Record)
		script      map[string]answer
		wantStatus  int
		wantCode    string
		wantRetry   time.Duration // Retry-After, 0 = none
		passStatus  int           // a pass-through answer's status
		shouldRetry *bool
	}{
		{
			name:   "R-END-1 a member cooling after a 429 makes the answer weir_pool_cooling",
			script: map[string]answer{"a": rate429Until(t0.Add(7 * time.Second)), "b": v(KindKeyRefused, 401)},
			// b's missing key is not the answer while a only cools.
			wantStatus: 429, wantCode: CodePoolCooling, wantRetry: 7 * time.Second, shouldRetry: &retryTrue,
		},
		{
			name:       "R-END-1 a 5xx cooling counts too",
			script:     map[string]answer{"a": v(KindServerError, 503), "b": quota400},
			wantStatus: 429, wantCode: CodePoolCooling, wantRetry: 5 * time.Second, shouldRetry: &retryTrue,
		},
		{
			name: "R-END-1 every member already cooling after transport failures when the call began",
			before: func(st *States, r *Record) {
				st.get(r.ID+"/a").cool(t0, t0.Add(3*time.Second), time.Hour, KindTransport, "dial")
				st.get(r.ID+"/b").cool(t0, t0.Add(9*time.Second), time.Hour, KindTimeout, "timeout")
			},
			wantStatus: 429, wantCode: CodePoolCooling, wantRetry: 3 * time.Second, shouldRetry: &retryTrue,
		},
		{
			name:       "R-END-2 spent with a 429 refusal: that answer as is",
			script:     map[string]answer{"a": quota429, "b": quota429},
			passStatus: 429, shouldRetry: &retryFalse,
		},
		{
			name:       "R-END-2 spent without a 429: weir_pool_spent, insufficient_quota",
			script:     map[string]answer{"a": quota400, "b": v(KindKeyRefused, 401)},
			wantStatus: 429, wantCode: CodePoolSpent, shouldRetry: &retryFalse,
		},
		{
			name:       "R-END-3 members the edge cannot sign for",
			script:     map[string]answer{"a": v(KindKeyUnavailable, 0), "b": v(KindKeyPassing, 0)},
			wantStatus: 412, wantCode: CodeKeyUnavailable,
		},
		{
			name:       "R-END-4 the call was cut while a key was read",
			script:     map[string]answer{"a": v(KindCallEnded, 0)},
			wantStatus: 503, wantCode: CodeCallEnded,
		},
		{
			name:       "R-END-5 every member refused the key: the last such answer",
			script:     map[string]answer{"a": v(KindKeyRefused, 401), "b": v(KindKeyRefused, 403)},
			passStatus: 403,
		},
		{
			name:       "R-END-6 transport failures: weir_upstream_unreachable",
			script:     map[string]answer{"a": v(KindTimeout, 0), "b": v(KindTransport, 0)},
			wantStatus: 502, wantCode: CodeUpstreamUnreachable, wantRetry: 5 * time.Second,
		},
		{
			name:       "R-END-6 the last failure a timeout: weir_upstream_timeout",
			script:     map[string]answer{"a": v(KindTransport, 0), "b": v(KindTimeout, 0)},
			wantStatus: 504, wantCode: CodeUpstreamTimeout, wantRetry: 5 * time.Second,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb, r := onePool()
			st := NewStates()
			if tc.before != nil {
				tc.before(st, r)
			}
			c := begin(t, tb, st, chat("m"), 1)
			_, act := drive(t, c, t0, tc.script)
			if act == ActDeliver {
				t.Fatal("a member answered")
			}
			c.Finish(t0, Usage{})
			f := c.Final(t0)
			if tc.passStatus != 0 {
				if f.Err != nil || f.PassThrough < 0 || c.Attempts[f.PassThrough].Status != tc.passStatus {
					t.Fatalf("final %+v %v, want pass-through of %d", f, f.Err, tc.passStatus)
				}
			} else {
				if f.Err == nil || f.Err.Status != tc.wantStatus || f.Err.Code != tc.wantCode {
					t.Fatalf("final %+v %v, want %d %s", f, f.Err, tc.wantStatus, tc.wantCode)
				}
				if f.Err.RetryAfter != tc.wantRetry {
					t.Fatalf("retry after %v, want %v", f.Err.RetryAfter, tc.wantRetry)
				}
				if tc.wantCode == CodePoolSpent && f.Err.ErrorCode != CodeInsufficientQuota {
					t.Fatalf("error code %q", f.Err.ErrorCode)
				}
			}
			sr := f.ShouldRetry
			if f.Err != nil && f.Err.ShouldRetry != nil {
				sr = f.Err.ShouldRetry
			}
			if (sr == nil) != (tc.shouldRetry == nil) || (sr != nil && *sr != *tc.shouldRetry) {
				t.Fatalf("x-should-retry %v, want %v", sr, tc.shouldRetry)
			}
		})
	}
}

func TestMaxWait(t *testing.T) {
	t.Parallel()
	t.Run("R-END-1 max_wait waits for the first member to return and tries it again", func(t *testing.T) {
		tb, _ := onePool(recovery(func(rc *Recovery) { rc.MaxWait = 10 * time.Second }))
		c := begin(t, tb, NewStates(), chat("m"), 1)
		calls := map[string]int{}
		now := t0
		var waited time.Duration
		for {
			s, ok := c.Next(now)
			if !ok {
				t.Fatal("gave up instead of waiting")
			}
			waited += s.Wait
			now = now.Add(s.Wait)
			c.Dispatch(now)
			calls[s.Member.Name]++
			ans := rate429Until(now.Add(4 * time.Second))
			if calls[s.Member.Name] == 2 {
				ans = ok200()
			}
			if c.Report(ans.v, nil, now) == ActDeliver {
				break
			}
		}
		if waited != 4*time.Second || c.Sent() != 3 {
			t.Fatalf("waited %v with %d attempts, want 4s and 3", waited, c.Sent())
		}
	})
	t.Run("R-END-1 no wait beyond max_wait", func(t *testing.T) {
		tb, _ := onePool(recovery(func(rc *Recovery) { rc.MaxWait = 2 * time.Second }))
		c := begin(t, tb, NewStates(), chat("m"), 1)
		_, act := drive(t, c, t0, map[string]answer{"a": rate429Until(t0.Add(4 * time.Second)), "b": rate429Until(t0.Add(5 * time.Second))})
		if act != 0 {
			t.Fatal("waited")
		}
		if f := c.Final(t0); f.Err == nil || f.Err.Code != CodePoolCooling || RetryAfterSeconds(f.Err.RetryAfter) != 4 {
			t.Fatalf("final %+v", f.Err)
		}
	})
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	// R-END-1: seconds until the first returns, rounded up, at least 1.
	for _, x := range []struct {
		d    time.Duration
		want int64
	}{{0, 1}, {-time.Second, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {59 * time.Second, 59}} {
		if got := RetryAfterSeconds(x.d); got != x.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", x.d, got, x.want)
		}
	}
}
