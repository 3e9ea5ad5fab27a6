// Package logflags holds the log settings the edge and the control plane
// share: the --log-format and --log-level flags (WEIR_LOG_FORMAT,
// WEIR_LOG_LEVEL) and the log/slog logger they make. Standard library only.
//
// Production logs are JSON, one object per line (time, level, msg, then the
// attributes), for a log pipeline to index; text (key=value) is for a
// person reading a terminal, and is the default in dev mode only.
package logflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// The formats --log-format takes.
const (
	FormatJSON = "json"
	FormatText = "text"
)

// Options are the log settings of a command line. The zero value (after
// Resolve) logs JSON at info level.
type Options struct {
	// Format is FormatJSON or FormatText; empty until Resolve means the
	// default for the mode.
	Format string
	// Level is a slog level name: debug, info, warn or error (case does
	// not matter; slog's offsets such as warn+2 are accepted too). Empty
	// means info.
	Level string
}

// Register adds --log-format and --log-level to fs, parsing into o, with
// the environment (getenv: WEIR_LOG_FORMAT, WEIR_LOG_LEVEL) as their
// defaults. devNote says when the text format is the default (e.g. "with
// --dev"); the format stays empty unless set, for Resolve to decide.
func (o *Options) Register(fs *flag.FlagSet, getenv func(string) string, devNote string) {
	def := "json"
	if devNote != "" {
		def += "; text " + devNote
	}
	fs.StringVar(&o.Format, "log-format", getenv("WEIR_LOG_FORMAT"), "log format on stderr: json or text (default "+def+") [WEIR_LOG_FORMAT]")
	fs.StringVar(&o.Level, "log-level", envOr(getenv("WEIR_LOG_LEVEL"), "info"), "lowest level logged: debug, info, warn or error [WEIR_LOG_LEVEL]")
}

// Resolve fills in the default format: text when dev is true, else JSON.
// A format given explicitly stays.
func (o *Options) Resolve(dev bool) {
	if o.Format != "" {
		return
	}
	o.Format = FormatJSON
	if dev {
		o.Format = FormatText
	}
}

// Validate reports every problem of o (after Resolve).
func (o Options) Validate() error {
	var errs []error
	switch strings.ToLower(o.Format) {
	case FormatJSON, FormatText, "":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: want json or text", o.Format))
	}
	if _, err := o.level(); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q: want debug, info, warn or error", o.Level))
	}
	return errors.Join(errs...)
}

func (o Options) level() (slog.Level, error) {
	var l slog.Level
	if o.Level == "" {
		return slog.LevelInfo, nil
	}
	err := l.UnmarshalText([]byte(o.Level))
	return l, err
}

// Logger is a logger writing to w in o's format from o's level up. Options
// that do not validate give JSON at info level: call Validate first.
func (o Options) Logger(w io.Writer) *slog.Logger {
	l, err := o.level()
	if err != nil {
		l = slog.LevelInfo
	}
	ho := &slog.HandlerOptions{Level: l}
	if strings.EqualFold(o.Format, FormatText) {
		return slog.New(slog.NewTextHandler(w, ho))
	}
	return slog.New(slog.NewJSONHandler(w, ho))
}

func envOr(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
