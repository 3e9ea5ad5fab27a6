package gateway

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestKeepAliveTimerReuse: keep-alive timers stopped before their first
// comment are reused by later streams (kaTimers); each stream's comments go
// to that stream only, and a stream stopped early gets none, whichever
// timer it had.
func TestKeepAliveTimerReuse(t *testing.T) {
	for i := 0; i < 20; i++ {
		var quiet, chatty out
		rq, rc := httptest.NewRecorder(), httptest.NewRecorder()
		quiet.init(rq)
		chatty.init(rc)

		quiet.keepAlive(time.Now(), time.Hour, time.Now)
		quiet.stopKeepAlive() // its timer may go back to kaTimers

		chatty.keepAlive(time.Now(), time.Millisecond, time.Now)
		for deadline := time.Now().Add(5 * time.Second); ; {
			chatty.mu.Lock()
			n := chatty.kaN
			chatty.mu.Unlock()
			if n >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d keep-alive comments after 5s", i, n)
			}
			time.Sleep(time.Millisecond)
		}
		chatty.stopKeepAlive() // its timer ran: it is not reused

		quiet.keepAlive(time.Now(), time.Hour, time.Now) // armed again, maybe with chatty's old timer
		quiet.stopKeepAlive()

		chatty.mu.Lock()
		got := rc.Body.String()
		chatty.mu.Unlock()
		if !strings.HasPrefix(got, ": weir waiting\n\n: weir waiting\n\n") {
			t.Fatalf("round %d: chatty stream got %q", i, got)
		}
		if rq.Body.Len() != 0 || rq.Code != 200 || len(rq.Header()) != 0 {
			t.Fatalf("round %d: quiet stream got %d %v %q", i, rq.Code, rq.Header(), rq.Body.String())
		}
	}
}
