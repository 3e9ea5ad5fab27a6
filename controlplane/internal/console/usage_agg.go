package console

import (
	"sort"
	"time"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// maxUsageRows caps the usage rows one page reads to draw its charts; the
// page says so when it stopped there (the CSV export has no cap).
const maxUsageRows = 50000

// usageAgg sums usage rows per member and time bucket, on integers.
type usageAgg struct {
	gran    bucketSize
	buckets []time.Time
	index   map[int64]int
	series  map[string]*memberUsage
	// rows is the number of rows read; capped is true when reading stopped
	// at the cap.
	rows, cap int
	capped    bool
}

// memberUsage is one member's usage: per bucket and in total.
type memberUsage struct {
	record, member string
	cost, calls    []int64
	// Totals.
	totalCost, totalCalls, failed, estimated, input, output int64
}

func (m *memberUsage) key() string { return m.record + "/" + m.member }

// notSentLabel names, in the charts' legends and the member table, the
// calls that were never sent to a member: refused at the edge (a budget,
// a caller limit, no eligible member, every member cooling…) or cancelled
// by the caller before a member was tried. Their usage rows name no record
// and no member.
const notSentLabel = "not sent to a member (refused or cancelled at the edge)"

// notSent reports whether m is the calls that no member was sent.
func (m *memberUsage) notSent() bool { return m.record == "" && m.member == "" }

// label is m's name for people: "record/member", or notSentLabel.
func (m *memberUsage) label() string {
	if m.notSent() {
		return notSentLabel
	}
	return m.key()
}

func newUsageAgg(start, end time.Time, gran bucketSize, maxRows int) *usageAgg {
	a := &usageAgg{gran: gran, buckets: gran.buckets(start, end), index: map[int64]int{}, series: map[string]*memberUsage{}, cap: maxRows}
	for i, b := range a.buckets {
		a.index[b.Unix()] = i
	}
	return a
}

// add sums one batch of rows; it reports false once the cap is reached
// (the rows past it are not counted).
func (a *usageAgg) add(rows []*adminv1.UsageRow) bool {
	for _, r := range rows {
		if a.rows >= a.cap {
			a.capped = true
			return false
		}
		a.rows++
		key := r.GetRecord() + "/" + r.GetMember()
		m := a.series[key]
		if m == nil {
			m = &memberUsage{record: r.GetRecord(), member: r.GetMember(),
				cost: make([]int64, len(a.buckets)), calls: make([]int64, len(a.buckets))}
			a.series[key] = m
		}
		if i, ok := a.bucketOf(r.GetBucketStart().AsTime()); ok {
			m.cost[i] += r.GetCostNanos()
			m.calls[i] += r.GetCalls()
		}
		m.totalCost += r.GetCostNanos()
		m.totalCalls += r.GetCalls()
		m.failed += r.GetFailedCalls()
		m.estimated += r.GetEstimatedCostNanos()
		m.input += r.GetInputTokens()
		m.output += r.GetOutputTokens()
	}
	return true
}

// bucketOf finds the bucket holding t.
func (a *usageAgg) bucketOf(t time.Time) (int, bool) {
	if i, ok := a.index[t.Unix()]; ok {
		return i, true
	}
	i := sort.Search(len(a.buckets), func(i int) bool { return a.buckets[i].After(t) }) - 1
	if i < 0 || !t.Before(a.gran.next(a.buckets[i])) {
		return 0, false
	}
	return i, true
}

// members returns the members by total cost, then calls, then name; the
// calls sent to no member come last.
func (a *usageAgg) members() []*memberUsage {
	out := make([]*memberUsage, 0, len(a.series))
	for _, m := range a.series {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].notSent() != out[j].notSent() {
			return out[j].notSent()
		}
		if out[i].totalCost != out[j].totalCost {
			return out[i].totalCost > out[j].totalCost
		}
		if out[i].totalCalls != out[j].totalCalls {
			return out[i].totalCalls > out[j].totalCalls
		}
		return out[i].key() < out[j].key()
	})
	return out
}
