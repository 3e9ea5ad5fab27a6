package console

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/controlplane/internal/money"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

func TestChartNiceStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ highest, want int64 }{
		{1, 1}, {5, 1}, {6, 2}, {10, 2}, {11, 5}, {25, 5}, {26, 10}, {7200, 2000}, {1_000_000_001, 500_000_000},
	} {
		if got := chartNiceStep(tc.highest, chartYTicks); got != tc.want {
			t.Errorf("chartNiceStep(%d) = %d, want %d", tc.highest, got, tc.want)
		}
	}
}

func TestBuildChart(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	buckets := bucketDay.buckets(start, start.AddDate(0, 0, 3))
	c := buildChart(chartInput{
		id: "x", title: "Cost", buckets: buckets, gran: bucketDay, format: fmtUSD, tick: fmtUSD,
		series: []chartSeriesInput{
			{key: "r/a", label: "r/a", colour: 0, values: []int64{3, 0, 1}},
			{key: "r/b", label: "r/b", colour: 11, values: []int64{2, 4, 0}},
		},
	})
	if c.Empty || len(c.Series) != 2 || c.Series[0].Total != "4" || c.Series[1].Total != "6" || c.Series[1].Class != "s1" {
		t.Fatalf("chart %+v", c)
	}
	// Highest stack 5 → ticks 0..5 by 1.
	if len(c.YTicks) != 6 || c.YTicks[5].Label != "$0.000000005" || c.YTicks[0].Pos != chartItoa(chartBottom)+".0" {
		t.Errorf("y ticks %+v", c.YTicks)
	}
	// r/b's first bar sits on top of r/a's.
	a0, b0 := c.Series[0].Bars[0], c.Series[1].Bars[0]
	if a0.Y != "100.0" || a0.H != "132.0" || b0.Y != "12.0" || b0.H != "88.0" || a0.X != b0.X {
		t.Errorf("bars a %+v b %+v", a0, b0)
	}
	if !strings.Contains(b0.Title, "r/b · 2026-03-01 · $0.000000002") {
		t.Errorf("title %q", b0.Title)
	}
	if len(c.XTicks) != 3 || c.XTicks[0].Label != "Mar 1" {
		t.Errorf("x ticks %+v", c.XTicks)
	}
	if e := buildChart(chartInput{id: "e", buckets: buckets, gran: bucketDay, empty: "nothing", format: fmtUSD, tick: fmtUSD}); !e.Empty || e.Desc != "nothing" {
		t.Errorf("empty chart %+v", e)
	}
}

func TestUsageAggCap(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	a := newUsageAgg(start, start.Add(24*time.Hour), bucketHour, 3)
	row := func(h int, member string, cost int64) *adminv1.UsageRow {
		return &adminv1.UsageRow{BucketStart: timestamppb.New(start.Add(time.Duration(h) * time.Hour)), Record: "r", Member: member, Calls: 1, CostNanos: cost}
	}
	if !a.add([]*adminv1.UsageRow{row(0, "a", 5), row(0, "b", 7)}) {
		t.Fatal("capped early")
	}
	if a.add([]*adminv1.UsageRow{row(23, "a", 1), row(1, "a", 100)}) || !a.capped || a.rows != 3 {
		t.Fatalf("cap: capped %v rows %d", a.capped, a.rows)
	}
	m := a.members()
	if len(m) != 2 || m[0].key() != "r/b" || m[1].totalCost != 6 || m[1].cost[23] != 1 || m[1].cost[1] != 0 {
		t.Errorf("members %+v %+v", m[0], m[1])
	}
}

func TestMoney(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"25", 25_000_000_000, true}, {"2.50", 2_500_000_000, true}, {"$0.000000001", 1, true}, {" 10.5 ", 10_500_000_000, true},
		{"0.0000000001", 0, false}, {"-1", 0, false}, {"1e3", 0, false}, {"", 0, false}, {"1.", 0, false}, {"99999999999", 0, false},
	} {
		got, err := parseUSD(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseUSD(%q) = %d, %v", tc.in, got, err)
		}
	}
	for n, want := range map[int64]string{0: "0", 1: "0.000000001", 2_750_000_000: "2.75", -5: "-0.000000005", 12_000_000_000: "12"} {
		if got := money.FormatNanos(n); got != want {
			t.Errorf("money.FormatNanos(%d) = %q, want %q", n, got, want)
		}
	}
	if fmtUSD(-5) != "-$0.000000005" || budgetPercent(1, 3) != "33%" || budgetPercent(5, 0) != "—" {
		t.Error("fmtUSD or budgetPercent")
	}
}
