package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/words"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// outputMode is the value of --output.
type outputMode string

const (
	outputTable outputMode = "table"
	outputJSON  outputMode = "json"
)

// String implements flag.Value.
func (m *outputMode) String() string { return string(*m) }

// Set implements flag.Value.
func (m *outputMode) Set(s string) error {
	switch s {
	case "table", "text":
		*m = outputTable
	case "json":
		*m = outputJSON
	default:
		return fmt.Errorf("want table or json")
	}
	return nil
}

// json reports whether --output json was given.
func (a *app) json() bool { return a.output == outputJSON }

// printJSON prints m as `--output json` does: the proto field names, every
// field present (so scripts see stable shapes), and every enum as its word
// (package words: "failed_over", never ATTEMPT_OUTCOME_FAILED_OVER, ROUTING
// R-SEE-2), indented.
func (a *app) printJSON(m proto.Message) error {
	b, err := words.JSON(m)
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	return a.writeIndented(b)
}

// printPlainJSON prints v (a documented shape, not a proto message) as
// indented JSON.
func (a *app) printPlainJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	return a.writeIndented(b)
}

// writeIndented writes compact JSON b indented, with a final newline.
func (a *app) writeIndented(b []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	out.WriteByte('\n')
	_, err := a.Stdout.Write(out.Bytes())
	return err
}

// emit prints resp as JSON with --output json, else calls text.
func (a *app) emit(resp proto.Message, text func(w io.Writer) error) error {
	if a.json() {
		return a.printJSON(resp)
	}
	return text(a.Stdout)
}

// printWarnings prints each warning on stderr as "warning: …" (R-SEC-4 and
// the other codes of Warning), whatever the output mode.
func (a *app) printWarnings(ws []*adminv1.Warning) {
	for _, w := range ws {
		msg := w.GetMessage()
		if msg == "" {
			msg = w.GetCode()
		}
		var about []string
		if w.GetRecord() != "" {
			about = append(about, "record "+w.GetRecord())
		}
		if len(w.GetMembers()) > 0 {
			about = append(about, "members "+strings.Join(w.GetMembers(), ", "))
		}
		extra := ""
		if len(about) > 0 {
			extra = "; " + strings.Join(about, ", ")
		}
		fmt.Fprintf(a.Stderr, "warning: %s [%s%s]\n", msg, w.GetCode(), extra)
	}
}

// printError prints a failed request on stderr: "error: <message>", then
// each validation problem once, on its own line, its field named in the
// CLI's words where a flag set it ("--price claude-x=3,15: …").
func (a *app) printError(err error) {
	problems := validationProblems(err)
	fmt.Fprintf(a.Stderr, "error: %s\n", errorText(err, len(problems)))
	for _, p := range problems {
		field := p.GetField()
		if field != "" && a.fieldWords != nil {
			field = a.fieldWords(field)
		}
		if field == "" {
			field = "request"
		}
		fmt.Fprintf(a.Stderr, "  %s: %s [%s]\n", field, p.GetMessage(), p.GetCode())
	}
	switch connect.CodeOf(err) {
	case connect.CodeUnauthenticated:
		fmt.Fprintln(a.Stderr, "hint: the admin token was refused; run weir login --url URL --token TOKEN")
	case connect.CodeUnavailable:
		fmt.Fprintln(a.Stderr, "hint: is the control plane running at the URL given to weir login (or WEIR_URL)?")
	}
}

// validationProblems returns the problems of a Connect error's
// ValidationError detail, nil when it has none.
func validationProblems(err error) []*adminv1.Problem {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	var out []*adminv1.Problem
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		if ve, ok := v.(*adminv1.ValidationError); ok {
			out = append(out, ve.GetProblems()...)
		}
	}
	return out
}

// errorText renders err with a Connect error's code in words ("not found:
// …") in place of its snake_case form. When the error carries problems
// (printed one per line after it), the server's message, which lists them
// too, is replaced by their count, so that each problem is printed once.
func errorText(err error, problems int) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err.Error()
	}
	code := strings.ReplaceAll(ce.Code().String(), "_", " ")
	text := code
	switch {
	case problems == 1:
		text += ": 1 problem"
	case problems > 1:
		text += fmt.Sprintf(": %d problems", problems)
	case ce.Message() != "":
		text += ": " + ce.Message()
	}
	// Keep the context the command wrapped around the Connect error.
	full := err.Error()
	if i := strings.Index(full, ce.Error()); i > 0 {
		return full[:i] + text
	}
	return text
}

// table is a tab-aligned table on a writer.
type table struct {
	tw *tabwriter.Writer
}

// newTable starts a table with a header row.
func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

// row adds one row; empty cells print as "-".
func (t *table) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			c = "-"
		}
		c = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprintln(t.tw)
}

// flush writes the table out.
func (t *table) flush() error { return t.tw.Flush() }

// kv prints aligned "key  value" lines, skipping empty values.
func kv(w io.Writer, pairs ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\n", pairs[i], pairs[i+1])
	}
	return tw.Flush()
}

// ts prints a timestamp as RFC 3339 in UTC, "" when unset.
func ts(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}

// dur prints a duration as a Go duration, "" when unset.
func dur(d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	return d.AsDuration().String()
}

// yes prints a boolean as "yes" or "".
func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// joinMap prints a map as "k=v,k=v" sorted by key; keys in mark get a '*'.
func joinMap(m map[string]string, mark map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		p := k + "=" + m[k]
		if mark[k] {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}
