package console

import (
	"math"
	"strconv"
	"time"

	"weir.dev/web"
)

// Chart geometry (viewBox units).
const (
	chartWidth  = 720
	chartHeight = 260
	chartLeft   = 72
	chartRight  = chartWidth - 8
	chartTop    = 12
	chartBottom = chartHeight - 28
	// chartXLabels is the most x axis labels drawn.
	chartXLabels = 8
	// chartYTicks is the most y axis steps above zero.
	chartYTicks = 5
	// chartColours is the number of series colour classes (s0…s9).
	chartColours = 10
)

// chartInput is what a stacked chart shows: values per bucket per series,
// all integers (nano-dollars or counts).
type chartInput struct {
	id, title string
	// buckets are the buckets' starts; gran their size.
	buckets []time.Time
	gran    bucketSize
	series  []chartSeriesInput
	// format prints a value for people ("$0.25", "12 calls"); tick prints
	// an axis label.
	format, tick func(int64) string
	// empty is the text of a chart without any value.
	empty string
}

type chartSeriesInput struct {
	key, label string
	// colour is the series' colour index (stable across the page's charts).
	colour int
	values []int64
}

// buildChart computes a stacked bar chart: bars are stacked in series
// order, the y axis runs from 0 to a round number at or above the highest
// stack, ticks at round steps. Sums are integers; only pixel positions are
// floating point.
func buildChart(in chartInput) web.Chart {
	c := web.Chart{
		ID: in.id, Title: in.title,
		Width: chartItoa(chartWidth), Height: chartItoa(chartHeight),
		Left: chartItoa(chartLeft), Right: chartItoa(chartRight), Top: chartItoa(chartTop), Bottom: chartItoa(chartBottom),
	}
	n := len(in.buckets)
	stacks := make([]int64, n)
	var grand int64
	for _, s := range in.series {
		for i, v := range s.values {
			if i < n && v > 0 {
				stacks[i] += v
				grand += v
			}
		}
	}
	if n == 0 || grand == 0 {
		c.Empty = true
		c.Desc = in.empty
		return c
	}
	var highest int64
	for _, v := range stacks {
		highest = max(highest, v)
	}
	step := chartNiceStep(highest, chartYTicks)
	top := step * chartCeilDiv(highest, step)
	plotH := float64(chartBottom - chartTop)
	y := func(v int64) float64 { return chartBottom - plotH*float64(v)/float64(top) }
	for v := int64(0); v <= top; v += step {
		c.YTicks = append(c.YTicks, web.ChartTick{Pos: chartPx(y(v)), Label: in.tick(v)})
		if v > math.MaxInt64-step {
			break
		}
	}
	slot := float64(chartRight-chartLeft) / float64(n)
	barW := slot * 0.8
	every := int(chartCeilDiv(int64(n), chartXLabels))
	for i, b := range in.buckets {
		if i%every == 0 {
			c.XTicks = append(c.XTicks, web.ChartTick{Pos: chartPx(chartLeft + slot*(float64(i)+0.5)), Label: in.gran.short(b, i == 0)})
		}
	}
	base := make([]int64, n)
	for _, s := range in.series {
		cs := web.ChartSeries{Key: s.key, Label: s.label, Class: "s" + chartItoa(s.colour%chartColours)}
		var total int64
		for i, v := range s.values {
			if i >= n || v <= 0 {
				continue
			}
			total += v
			y0, y1 := y(base[i]), y(base[i]+v)
			base[i] += v
			cs.Bars = append(cs.Bars, web.ChartBar{
				X: chartPx(chartLeft + slot*float64(i) + (slot-barW)/2), W: chartPx(barW),
				Y: chartPx(y1), H: chartPx(max(y0-y1, 0.5)),
				Title: s.label + " · " + in.gran.long(in.buckets[i]) + " · " + in.format(v),
			})
		}
		cs.Total, cs.TotalText = strconv.FormatInt(total, 10), in.format(total)
		c.Series = append(c.Series, cs)
	}
	c.Desc = in.title + " from " + in.gran.long(in.buckets[0]) + " to " + in.gran.long(in.buckets[n-1]) +
		", by member; total " + in.format(grand) + "."
	return c
}

// chartNiceStep returns the smallest step of the form 1, 2 or 5 × 10^k (k ≥ 0)
// such that at most ticks steps reach highest.
func chartNiceStep(highest int64, ticks int64) int64 {
	for mag := int64(1); ; mag *= 10 {
		for _, m := range []int64{1, 2, 5} {
			step := m * mag
			if chartCeilDiv(highest, step) <= ticks {
				return step
			}
		}
		if mag > math.MaxInt64/100 {
			return highest
		}
	}
}

func chartCeilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

func chartPx(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func chartItoa(n int) string { return strconv.Itoa(n) }

// bucketSize is the size of a chart's time buckets.
type bucketSize int

const (
	bucketHour bucketSize = iota
	bucketDay
	bucketMonth
)

func (b bucketSize) String() string {
	switch b {
	case bucketHour:
		return "hour"
	case bucketDay:
		return "day"
	}
	return "month"
}

// next is the start of the bucket after t.
func (b bucketSize) next(t time.Time) time.Time {
	switch b {
	case bucketHour:
		return t.Add(time.Hour)
	case bucketDay:
		return t.AddDate(0, 0, 1)
	}
	return t.AddDate(0, 1, 0)
}

// floor is the start of t's bucket (UTC).
func (b bucketSize) floor(t time.Time) time.Time {
	t = t.UTC()
	switch b {
	case bucketHour:
		return t.Truncate(time.Hour)
	case bucketDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// buckets lists the bucket starts covering [start, end).
func (b bucketSize) buckets(start, end time.Time) []time.Time {
	var out []time.Time
	for t := b.floor(start); t.Before(end); t = b.next(t) {
		out = append(out, t)
	}
	return out
}

// short is an axis label: hours as "15:00" (with the date at midnight and
// on the first label), days as "Mar 3", months as "Mar 2026".
func (b bucketSize) short(t time.Time, first bool) string {
	t = t.UTC()
	switch b {
	case bucketHour:
		if first || t.Hour() == 0 {
			return t.Format("Jan 2 15:04")
		}
		return t.Format("15:04")
	case bucketDay:
		return t.Format("Jan 2")
	}
	return t.Format("Jan 2006")
}

// long names a bucket in hover texts and descriptions.
func (b bucketSize) long(t time.Time) string {
	t = t.UTC()
	switch b {
	case bucketHour:
		return t.Format("2006-01-02 15:04 UTC")
	case bucketDay:
		return t.Format("2006-01-02")
	}
	return t.Format("2006-01")
}
