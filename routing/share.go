package routing

import "time"

// Share is one edge's share of a cluster-wide declared limit when
// liveEdges edges are live (R-HEAD-7): the limit divided by the live
// edges, rounded up, as ROUTING.md says. Rounding up never leaves an edge
// with a share of 0 for a limit that is set (so every limit > 0 has a
// share ≥ 1), at the cost of N edges together allowing up to N−1 more
// than the limit when it is not a multiple of N. liveEdges below 1 counts
// as 1 (a standalone edge has the whole limit); a limit ≤ 0 (none
// declared) has share 0. Every shared limit uses this one function:
// members' rpm, input_tpm, output_tpm, rpd and max_in_flight, and the
// caller limits of tenants and keys (R-CAP-2).
func Share(limit int64, liveEdges int) int64 {
	if limit <= 0 {
		return 0
	}
	n := int64(max(liveEdges, 1))
	return limit/n + min(limit%n, 1)
}

// DefaultFullWait is how long a call whose every member is full waits for
// a free slot when its record sets no max_wait (R-CAP-1).
const DefaultFullWait = 10 * time.Second

// dayBounds returns the calendar day of zone that holds now: its first
// instant (midnight) and the next midnight (R-HEAD-6). Both are computed
// with time.Date in the zone, so a day is 23 or 25 hours long across a
// daylight-saving change. A nil zone is UTC.
func dayBounds(now time.Time, zone *time.Location) (start, end time.Time) {
	if zone == nil {
		zone = time.UTC
	}
	y, m, d := now.In(zone).Date()
	start = time.Date(y, m, d, 0, 0, 0, 0, zone)
	end = time.Date(y, m, d+1, 0, 0, 0, 0, zone)
	if !end.After(now) {
		// A zone whose clocks jump at midnight has no 00:00 on that day,
		// and time.Date may then give an instant of the day before; the
		// day's first hour then ends it.
		end = time.Date(y, m, d+1, 1, 0, 0, 0, zone)
		if !end.After(now) {
			end = now.Add(time.Hour)
		}
	}
	return start, end
}

// NextMidnight is the end of the calendar day of zone that holds now: when
// a per-day quota counted in that zone starts again (R-HEAD-6).
func NextMidnight(now time.Time, zone *time.Location) time.Time {
	_, end := dayBounds(now, zone)
	return end
}

// dayZone is the record's day zone, UTC when it has none (R-HEAD-6).
func (r *Record) dayZone() *time.Location {
	if r == nil || r.DayZone == nil {
		return time.UTC
	}
	return r.DayZone
}

// dayCount counts one member's dispatches in one calendar day of a zone
// (R-HEAD-6).
type dayCount struct {
	start, end time.Time // the day counted: [start, end)
	zone       string    // the zone it was counted in
	n          int64
}

// today moves the count to the day of zone that holds now (a new day
// starts at 0) and returns it.
func (d *dayCount) today(now time.Time, zone *time.Location) int64 {
	if zone == nil {
		zone = time.UTC
	}
	if now.Before(d.start) || !now.Before(d.end) || d.zone != zone.String() {
		// A new day, or the record's zone changed: the count goes on only
		// when the day found starts at the same instant.
		start, end := dayBounds(now, zone)
		if !start.Equal(d.start) {
			d.n = 0
		}
		d.start, d.end, d.zone = start, end, zone.String()
	}
	return d.n
}

// add counts one dispatch at now.
func (d *dayCount) add(now time.Time, zone *time.Location) {
	d.today(now, zone)
	d.n++
}

// dayFull reports whether the member has used this edge's share of its
// declared rpd today (R-HEAD-6, R-HEAD-7); it is then not eligible until
// the day ends (ms.day.end).
func (ms *memberState) dayFull(m *Member, now time.Time, edges int) bool {
	rpd := Share(m.Limits.RPD, edges)
	return rpd > 0 && ms.day.today(now, m.Record.dayZone()) >= rpd
}
