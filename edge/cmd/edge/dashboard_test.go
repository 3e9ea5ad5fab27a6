package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dashboardFile is the Grafana dashboard of deploy/grafana, from this
// package's directory.
const dashboardFile = "../../../deploy/grafana/weir-dashboard.json"

// fromPrometheus are the series Prometheus itself makes for every target,
// which no edge exposes.
var fromPrometheus = map[string]bool{"up": true}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Datasource json.RawMessage `json:"datasource"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// selector is one series selector of a PromQL expression: a metric name
// and the label names its matchers name.
type selector struct {
	Metric string
	Labels []string
}

var (
	promString  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promRange   = regexp.MustCompile(`\[[^\]]*\]`)
	grafanaVar  = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promMatched = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}`)
	promLabel   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promGroup   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent   = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// promWords are PromQL's keywords and operators spelled as words.
	promWords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
		"on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true, "Inf": true, "NaN": true}
)

// promSelectors returns the series selectors of a PromQL expression:
// every metric name it reads, with the labels its matchers name. Function
// and aggregation names (an identifier before "("), label names of
// grouping clauses, strings, ranges, numbers and Grafana's $variables are
// not metric names. A selector with matchers but no name (`{__name__=…}`)
// is not supported and reported as the metric "".
func promSelectors(expr string) []selector {
	e := promString.ReplaceAllString(expr, `""`)
	e = grafanaVar.ReplaceAllString(e, "")
	e = promRange.ReplaceAllString(e, " ")
	var out []selector
	e = promMatched.ReplaceAllStringFunc(e, func(m string) string {
		sm := promMatched.FindStringSubmatch(m)
		s := selector{Metric: sm[1]}
		for _, l := range promLabel.FindAllStringSubmatch(sm[2], -1) {
			s.Labels = append(s.Labels, l[1])
		}
		out = append(out, s)
		return " "
	})
	e = promGroup.ReplaceAllString(e, " ")
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(e[loc[0]-1:loc[0]], "0123456789.") {
			continue // an exponent (1e3) or a duration's unit
		}
		if rest := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") || promWords[name] {
			continue
		}
		out = append(out, selector{Metric: name})
	}
	return out
}

func TestPromSelectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []selector
	}{
		{`up`, []selector{{Metric: "up"}}},
		{`sum by (status) (rate(weir_request_duration_seconds_count{instance=~"$instance"}[$__rate_interval]))`,
			[]selector{{Metric: "weir_request_duration_seconds_count", Labels: []string{"instance"}}}},
		{`histogram_quantile(0.99, sum by (le, record, member) (rate(foo_bucket{a="x{y}", b!~"1e3"}[5m])))`,
			[]selector{{Metric: "foo_bucket", Labels: []string{"a", "b"}}}},
		{`sum(rate(a_total[1m])) / ignoring(x) group_left(y) sum without (z) (b_total offset 5m) > bool 1e-3`,
			[]selector{{Metric: "a_total"}, {Metric: "b_total"}}},
		{`count(up{job="weir"} == 1) and on(instance) go_goroutines`,
			[]selector{{Metric: "up", Labels: []string{"job"}}, {Metric: "go_goroutines"}}},
		{`{__name__="x"}`, []selector{{Labels: []string{"__name__"}}}},
	} {
		if diff := cmp.Diff(tc.want, promSelectors(tc.expr)); diff != "" {
			t.Errorf("promSelectors(%s) (-want +got):\n%s", tc.expr, diff)
		}
	}
}

// exposition is what a /metrics page in Prometheus's text format holds:
// each sample name (a histogram foo gives foo_bucket, foo_sum and
// foo_count; a summary foo gives foo, foo_sum and foo_count) with the
// label names of its samples, only names with at least one sample.
func exposition(t *testing.T, r io.Reader) map[string]map[string]bool {
	t.Helper()
	types := map[string]string{}
	samples := map[string]map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		}
		m := sample.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if samples[m[1]] == nil {
			samples[m[1]] = map[string]bool{}
		}
		for _, l := range promLabel.FindAllStringSubmatch(promString.ReplaceAllString(m[2], `""`), -1) {
			samples[m[1]][l[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Every sample belongs to a declared family, by the suffixes its type
	// gives: a histogram's _bucket counts as the histogram's, not as a
	// metric of its own.
	for name := range samples {
		family := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suf); ok && (types[base] == "histogram" || (types[base] == "summary" && suf != "_bucket")) {
				family = base
			}
		}
		if types[family] == "" {
			t.Errorf("/metrics: sample %s has no # TYPE", name)
		}
	}
	return samples
}

// TestDashboardMetricsExist: every metric the Grafana dashboard of
// deploy/grafana queries (panels and variables) is on a real edge's
// /metrics after it served calls — streamed and not, one failing over,
// one refused by a caller limit — with the labels the queries match on.
func TestDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}

	// What the dashboard queries, by where.
	queries := map[string][]selector{}
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if ids[p.ID] {
				t.Errorf("%s: id used twice", where)
			}
			ids[p.ID] = true
			if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
				t.Errorf("%s: gridPos %+v outside the 24 columns", where, p.GridPos)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("%s: datasource is not the dashboard's ${datasource} variable", where)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no query", where)
			}
			for i, tg := range p.Targets {
				sel := promSelectors(tg.Expr)
				if len(sel) == 0 {
					t.Errorf("%s: query %d reads no metric: %s", where, i, tg.Expr)
				}
				queries[fmt.Sprintf("%s query %d", where, i)] = sel
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q.Query)
			continue
		}
		queries["variable "+v.Name] = []selector{{Metric: m[1]}}
	}
	if len(queries) < 10 {
		t.Fatalf("only %d queries found in %s", len(queries), dashboardFile)
	}

	// A real edge, after calls that make every labelled series exist.
	gw, admin := startFailoverEdge(t, io.Discard, func(string) string { return "" })
	for _, stream := range []bool{false, true} {
		if status, _ := call(t, gw, testCallerKey, stream); status != 200 {
			t.Fatalf("call (stream %v) = %d", stream, status)
		}
	}
	if status, _ := call(t, gw, limitedKey, false); status != 200 {
		t.Fatalf("first call of the limited key = %d", status)
	}
	if status, _ := call(t, gw, limitedKey, false); status != http.StatusTooManyRequests {
		t.Fatalf("second call of the limited key = %d, want 429", status)
	}
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	exposed := exposition(t, resp.Body)
	for _, w := range []string{"weir_pool_events_total", "weir_caller_limited_total", "weir_upstream_duration_seconds_bucket"} {
		if exposed[w] == nil {
			t.Fatalf("the calls made no %s series", w)
		}
	}

	var used []string
	for where, sels := range queries {
		for _, s := range sels {
			used = append(used, s.Metric)
			if fromPrometheus[s.Metric] {
				continue
			}
			labels, ok := exposed[s.Metric]
			if !ok {
				t.Errorf("%s: metric %q is not on the edge's /metrics", where, s.Metric)
				continue
			}
			for _, l := range s.Labels {
				if l != "instance" && l != "job" && !labels[l] { // instance and job: Prometheus's target labels
					t.Errorf("%s: %s has no label %q (it has %v)", where, s.Metric, l, slices.Sorted(mapsKeys(labels)))
				}
			}
		}
	}
	slices.Sort(used)
	used = slices.Compact(used)
	t.Logf("dashboard queries %d metrics: %v", len(used), used)
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
