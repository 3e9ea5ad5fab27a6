package logflags

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		env        map[string]string
		args       []string
		dev        bool
		wantFormat string
		wantLevel  slog.Level
		wantErr    string
	}{
		{name: "defaults", wantFormat: "json", wantLevel: slog.LevelInfo},
		{name: "dev defaults to text", dev: true, wantFormat: "text", wantLevel: slog.LevelInfo},
		{name: "flag beats dev", dev: true, args: []string{"--log-format", "json"}, wantFormat: "json", wantLevel: slog.LevelInfo},
		{name: "environment", env: map[string]string{"WEIR_LOG_FORMAT": "text", "WEIR_LOG_LEVEL": "debug"}, wantFormat: "text", wantLevel: slog.LevelDebug},
		{name: "flag beats environment", env: map[string]string{"WEIR_LOG_LEVEL": "debug"}, args: []string{"--log-level", "WARN"}, wantFormat: "json", wantLevel: slog.LevelWarn},
		{name: "error level", args: []string{"--log-level", "error"}, wantFormat: "json", wantLevel: slog.LevelError},
		{name: "bad format", args: []string{"--log-format", "xml"}, wantErr: `--log-format "xml"`},
		{name: "bad level", env: map[string]string{"WEIR_LOG_LEVEL": "loud"}, wantErr: `--log-level "loud"`},
		{name: "both bad", args: []string{"--log-format", "yaml", "--log-level", "verbose"}, wantErr: "--log-level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var o Options
			o.Register(fs, func(k string) string { return tc.env[k] }, "with --dev")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o.Resolve(tc.dev)
			err := o.Validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Validate() = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Format != tc.wantFormat {
				t.Errorf("format = %q, want %q", o.Format, tc.wantFormat)
			}
			log := o.Logger(io.Discard)
			if !log.Enabled(context.Background(), tc.wantLevel) || log.Enabled(context.Background(), tc.wantLevel-1) {
				t.Errorf("logger's lowest level is not %v", tc.wantLevel)
			}
		})
	}
}

func TestLoggerFormats(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	Options{Format: "json", Level: "info"}.Logger(&buf).Info("hello", "call_id", "c1")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("json format wrote %q: %v", buf.String(), err)
	}
	if line["msg"] != "hello" || line["call_id"] != "c1" || line["level"] != "INFO" {
		t.Errorf("json line = %v", line)
	}
	buf.Reset()
	Options{Format: "text"}.Logger(&buf).Info("hello", "call_id", "c1")
	if !strings.Contains(buf.String(), "msg=hello call_id=c1") {
		t.Errorf("text line = %q", buf.String())
	}
	buf.Reset()
	Options{Format: "json", Level: "warn"}.Logger(&buf).Info("quiet")
	if buf.Len() != 0 {
		t.Errorf("info logged at level warn: %q", buf.String())
	}
}

// The usage text names both variables, so that -h documents them.
func TestRegisterUsage(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var o Options
	o.Register(fs, func(string) string { return "" }, "")
	for name, env := range map[string]string{"log-format": "WEIR_LOG_FORMAT", "log-level": "WEIR_LOG_LEVEL"} {
		f := fs.Lookup(name)
		if f == nil || !strings.Contains(f.Usage, env) {
			t.Errorf("--%s: %+v", name, f)
		}
	}
}
