package console

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
)

// TestRecoveryDurations pins what a recovery duration input accepts (Go
// durations or plain seconds, converted exactly) and that what the form
// shows reads back to the same value.
func TestRecoveryDurations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		msg  string // part of the error, "" for none
	}{
		{"90", 90 * time.Second, ""},
		{"1.5", 1500 * time.Millisecond, ""},
		{"0", 0, ""},
		{".25", 250 * time.Millisecond, ""},
		{"90s", 90 * time.Second, ""},
		{"2m30s", 150 * time.Second, ""},
		{"1.5h", 90 * time.Minute, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"1h2m3s4ms", time.Hour + 2*time.Minute + 3*time.Second + 4*time.Millisecond, ""},
		{"0.000000001", time.Nanosecond, ""},
		{"1µs", time.Microsecond, ""},
		{"-5s", -5 * time.Second, ""},
		{"1.0000000001s", 0, "finer than a nanosecond"},
		{"0.0000000005", 0, "finer than a nanosecond"},
		{"1.5ns", 0, "finer than a nanosecond"},
		{"ten", 0, "not a duration"},
		{"5 s", 0, "not a duration"},
		{"5sec", 0, "not a duration"},
		{"1e3", 0, "not a duration"},
		{"s", 0, "not a duration"},
		{"1d", 0, "not a duration"},
		{"3000000h", 0, "too long"},
		{"99999999999999999999", 0, "too long"},
	} {
		got, err := parseDuration(tc.in)
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("parseDuration(%q): %v", tc.in, err)
		case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("parseDuration(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.msg)
		case tc.msg == "" && got != tc.want:
			t.Errorf("parseDuration(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {90 * time.Second, "1m30s"}, {time.Hour, "1h"}, {600 * time.Second, "10m"}, {1500 * time.Millisecond, "1.5s"},
		{250 * time.Millisecond, "250ms"}, {time.Hour + time.Second, "1h1s"}, {61*time.Second + 5*time.Millisecond, "1m1.005s"},
	} {
		got := durationText(durationpb.New(tc.d))
		if got != tc.want {
			t.Errorf("durationText(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if back, err := parseDuration(got); err != nil || back != tc.d {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", got, back, err, tc.d)
		}
	}
	if durationText(nil) != "" {
		t.Error("an unset duration is not shown empty")
	}
}
