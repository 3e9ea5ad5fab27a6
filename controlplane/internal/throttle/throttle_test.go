package throttle

import (
	"fmt"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestLimiter: five failures are free, then one per second; other
// addresses are untouched; memory stays bounded.
func TestLimiter(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := New(Config{Burst: 5, Every: time.Second, MaxAddrs: 3, Now: clk.now})
	a := "192.0.2.1:4000"
	for i := range 5 {
		if w := l.Wait(a); w != 0 {
			t.Fatalf("attempt %d refused (%v) within the burst", i, w)
		}
		l.Fail(a)
	}
	if w := l.Wait("192.0.2.1:5000"); w != time.Second {
		t.Fatalf("after the burst Wait = %v, want 1s (any port of the address)", w)
	}
	if w := l.Wait("192.0.2.2:4000"); w != 0 {
		t.Fatalf("another address waits %v", w)
	}
	clk.t = clk.t.Add(time.Second)
	if w := l.Wait(a); w != 0 {
		t.Fatalf("a second later Wait = %v, want 0", w)
	}
	l.Fail(a)
	if w := l.Wait(a); w == 0 {
		t.Fatal("a failure after the refill was not counted")
	}
	for i := range 10 {
		l.Fail(fmt.Sprintf("198.51.100.%d:1", i))
	}
	if n := l.Len(); n != 3 {
		t.Errorf("tracking %d addresses, want at most 3", n)
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.1:443":              "192.0.2.1",
		"[2001:db8:1:2:3::4]:443":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:443": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.1]:1":       "192.0.2.1",
		"in-process":                 "in-process",
	} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}
