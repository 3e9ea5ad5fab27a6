package gateway

import (
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// out is the caller's side of one call. It tracks the point of no return
// (R-FAIL-12): headers may go out early as a keep-alive for a stream still
// waiting for its provider, but the first content byte ends failover.
type out struct {
	rw http.ResponseWriter
	rc *http.ResponseController
	// rcv is what rc points to: held here so that a call's out takes no
	// allocation of its own.
	rcv http.ResponseController

	mu           sync.Mutex
	started      bool // status line and headers sent
	viaKeepAlive bool // sent as 200 SSE by keep-alive comments
	content      bool // a content byte reached the caller
	metaSent     bool // the meta comment line was written
	// meta says Start adds x-weir-provider, x-weir-member and
	// x-weir-attempts to the headers (run.metaHeaders), or, for a stream
	// that started with keep-alive comments, writes the same as a comment
	// line (run.metaComment) (R-SEE-1). It is set once the call has a
	// routing state.
	meta bool

	// ka sends the keep-alive comments (keepAlive): its function runs on
	// a timer, re-armed under mu after each comment, and writes nothing
	// once kaOff is set (under mu). kaN counts the comments sent.
	ka      *kaTimer
	kaOff   bool
	kaN     int
	kaStart time.Time
	kaEvery time.Duration
	kaNow   func() time.Time

	// run is the call being answered; Complete records it.
	run *callRun
}

// init readies o, a zero out, to answer through rw.
func (o *out) init(rw http.ResponseWriter) {
	o.rw = rw
	o.rcv = *http.NewResponseController(rw)
	o.rc = &o.rcv
}

// Start implements wire.Out.
func (o *out) Start(status int, h http.Header) { o.start(status, h, nil, false, false) }

// StartFrom implements wire.FromStarter: Start with the headers
// wire.AnswerHeaders takes from up, set in rw's header directly.
func (o *out) StartFrom(status int, up http.Header, sse bool) { o.start(status, nil, up, sse, true) }

// start is Start with h's headers, and when from is set wire.AnswerHeaders'
// from up.
func (o *out) start(status int, h, up http.Header, sse, from bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.viaKeepAlive {
		if o.meta && !o.metaSent {
			o.metaSent = true
			_, _ = o.rw.Write(o.run.metaComment())
		}
		return
	}
	if o.started {
		return
	}
	dst := o.rw.Header()
	for k, v := range h {
		dst[k] = v
	}
	if from {
		wire.AnswerHeaders(dst, up, sse)
	}
	if o.meta {
		o.run.metaHeaders(dst)
	}
	if _, ok := dst["Date"]; !ok {
		dst["Date"] = dateHeader(time.Now())
	}
	o.rw.WriteHeader(status)
	o.started = true
}

// dateNow holds the Date header value of the current second.
var dateNow atomic.Pointer[dateValue]

type dateValue struct {
	sec int64
	v   []string
}

// dateHeader is the Date header for a response started at now: what
// net/http would write when the handler sets none, formatted once a second
// and shared (capped, so that no append reaches another response's value)
// rather than formatted for every answer.
func dateHeader(now time.Time) []string {
	sec := now.Unix()
	if d := dateNow.Load(); d != nil && d.sec == sec {
		return d.v
	}
	v := []string{now.UTC().Format(http.TimeFormat)}
	v = v[:1:1]
	dateNow.Store(&dateValue{sec: sec, v: v})
	return v
}

// markStarted notes that the gateway wrote an answer directly to rw (its
// own error), so that nothing else starts a second one.
func (o *out) markStarted() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = true
}

// Write implements wire.Out.
func (o *out) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(p) > 0 {
		o.content = true
	}
	return o.rw.Write(p)
}

// Flush implements wire.Out.
func (o *out) Flush() { _ = o.rc.Flush() }

// Complete implements wire.Out: the relayed answer is complete and its end
// is not written yet, so the call's record is written now (callRun.commit).
func (o *out) Complete(u routing.Usage) {
	if o.run != nil {
		o.run.complete(u)
	}
}

// keepAlive starts sending ": weir waiting" comments to a streaming caller
// whose call has no upstream headers yet (R-FAIL-12): the first after
// every (routing.KeepAliveInterval in production), then every every, until
// stopKeepAlive. No goroutine waits for them: a timer runs keepAliveTick.
func (o *out) keepAlive(start time.Time, every time.Duration, now func() time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.kaStart, o.kaEvery, o.kaNow = start, every, now
	d := start.Add(every).Sub(now())
	k, _ := kaTimers.Get().(*kaTimer)
	if k == nil {
		k = new(kaTimer)
		k.o.Store(o)
		k.t = time.AfterFunc(d, k.tick)
	} else {
		k.o.Store(o)
		k.t.Reset(d)
	}
	o.ka = k
}

// kaTimer is a keep-alive timer and the out it is armed for. Most streams
// get their upstream headers before the first comment is due, so their
// timer never fires: stopKeepAlive gives such a timer back to kaTimers, and
// the next stream re-arms it instead of making a timer (and its function)
// of its own.
type kaTimer struct {
	t *time.Timer
	// o is the out the timer is armed for, set before each arming: atomic
	// because a timer's function reads it on a goroutine of its own.
	o atomic.Pointer[out]
}

func (k *kaTimer) tick() { k.o.Load().keepAliveTick() }

// kaTimers holds stopped keep-alive timers (*kaTimer) whose function never
// ran, for reuse.
var kaTimers sync.Pool

// keepAliveTick writes one keep-alive comment and arms the timer for the
// next, unless the comments are over.
func (o *out) keepAliveTick() {
	defer func() {
		// This function does not run on the call's goroutine: a panic here
		// would end the process. It ends the keep-alive comments only.
		if v := recover(); v != nil && o.run != nil {
			o.run.gw.notePanic(callLogger(o.run.gw.cfg.Log, o.run.id, o.run.table), o.run.endpoint, v, debug.Stack())
		}
	}()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.kaOff || !o.waiting() {
		return
	}
	o.kaN++
	o.ka.t.Reset(o.kaStart.Add(time.Duration(o.kaN+1) * o.kaEvery).Sub(o.kaNow()))
}

// waiting writes one ": weir waiting" comment, first sending the 200 SSE
// headers if nothing was sent yet. It returns false when the comments are
// over: content or a real answer's headers went out, or the caller is gone.
// o.mu is held.
func (o *out) waiting() bool {
	if o.content || (o.started && !o.viaKeepAlive) {
		return false
	}
	if !o.started {
		h := o.rw.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		o.rw.WriteHeader(http.StatusOK)
		o.started, o.viaKeepAlive = true, true
	}
	_, err := o.rw.Write([]byte(": weir waiting\n\n"))
	_ = o.rc.Flush()
	return err == nil
}

// stopKeepAlive stops the keep-alive comments; once it returns none is
// being written (a comment being written holds o.mu), so the caller's side
// has one writer again.
//
// A timer whose function never ran (no comment was due) is given back to
// kaTimers: Stop reports that the timer was still armed, so its function
// was not started for this arming, and kaN == 0 that it ran for no earlier
// one (each run that does not end the comments counts one and re-arms the
// timer; one that ends them leaves it unarmed, and Stop reports false).
// No goroutine of this call's comments can then still hold it.
func (o *out) stopKeepAlive() {
	if o.ka == nil { // set and cleared on the call's goroutine only
		return
	}
	o.mu.Lock()
	o.kaOff = true
	k, ran := o.ka, o.kaN > 0
	o.ka = nil
	o.mu.Unlock()
	if k.t.Stop() && !ran {
		k.o.Store(nil) // the pool keeps nothing of this call
		kaTimers.Put(k)
	}
}

func (o *out) state() (started, viaKeepAlive, content bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.started, o.viaKeepAlive, o.content
}

// setMeta makes Start add R-SEE-1's headers (or comment line) from now on.
func (o *out) setMeta() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.meta = true
}

// metaComment renders R-SEE-1's comment line for the call.
func (c *callRun) metaComment() []byte {
	p, m := c.names()
	return metaCommentLine(p, m, c.call.Sent())
}

// metaComment renders R-SEE-1's comment line.
func metaCommentLine(provider, member string, attempts int) []byte {
	return []byte(": weir provider=" + provider + " member=" + member + " attempts=" + strconv.Itoa(attempts) + "\n\n")
}

var _ wire.FromStarter = (*out)(nil)
