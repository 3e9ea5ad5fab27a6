package routing

import "time"

// windowSlots is the rolling minute at a resolution of one slot a second:
// the current second and the 60 before it.
const windowSlots = 61

// window counts what this edge sent to one member in a rolling minute, for
// declared limits (R-HEAD-2). A count is forgotten once its whole second
// lies more than 60 s back: at a time t in second s the window holds
// seconds s−60…s, which cover every instant of (t−60 s, t]. So an edge
// that keeps its count under a limit never sends more than that limit in
// any 60 s (forgetting the second s−60 at once would let up to one
// second's sends through twice; the simulator's two-edges-shared run
// showed it).
type window struct {
	sec [windowSlots]int64
	req [windowSlots]int64
	in  [windowSlots]int64
	out [windowSlots]int64
}

func (w *window) slot(now time.Time) int {
	s := now.Unix()
	i := int(((s % windowSlots) + windowSlots) % windowSlots)
	if w.sec[i] != s {
		w.sec[i], w.req[i], w.in[i], w.out[i] = s, 0, 0, 0
	}
	return i
}

func (w *window) add(now time.Time, req, in, out int64) {
	i := w.slot(now)
	w.req[i] += req
	w.in[i] += in
	w.out[i] += out
}

func (w *window) sums(now time.Time) (req, in, out int64) {
	s := now.Unix()
	for i := range windowSlots {
		if w.sec[i] > s-windowSlots && w.sec[i] <= s { // seconds s-60…s
			req += w.req[i]
			in += w.in[i]
			out += w.out[i]
		}
	}
	return
}

// headerDim is one dimension as the member's last answer's headers told it,
// corrected by in-flight accounting since (R-HEAD-3).
type headerDim struct {
	limit, remaining int64
	reset            time.Time
	known            bool // limit and remaining both known
}

// DimView is one dimension of a member's headroom as the edge sees it now.
type DimView struct {
	Dim       Dim
	Limit     int64
	Remaining int64
	Reset     time.Time
	// FromHeaders is true when the numbers come from the member's answers,
	// false when from declared limits against the edge's own count.
	FromHeaders bool
}

// dims returns every known dimension of a member (R-HEAD-1, R-HEAD-2):
// header readings first; declared limits against the rolling-minute count
// for dimensions the headers do not give. A header reading whose reset time
// has passed counts as refilled to its limit. A declared limit is
// cluster-wide: this edge counts against its share of it among edges live
// edges (R-HEAD-7), and the view shows that share as the limit.
func (s *memberState) dims(m *Member, now time.Time, edges int) []DimView {
	return s.appendDims(make([]DimView, 0, NumDims), m, now, edges)
}

// appendDims appends dims' views to out.
func (s *memberState) appendDims(out []DimView, m *Member, now time.Time, edges int) []DimView {
	var have [NumDims]bool
	for d := Dim(0); d < NumDims; d++ {
		h := s.hdr[d]
		if !h.known || h.limit <= 0 {
			continue
		}
		rem := h.remaining
		if !h.reset.IsZero() && !now.Before(h.reset) {
			rem = h.limit
		}
		out = append(out, DimView{Dim: d, Limit: h.limit, Remaining: clamp(rem, 0, h.limit), Reset: h.reset, FromHeaders: true})
		have[d] = true
	}
	req, in, outTok := s.win.sums(now)
	declared := [...]struct {
		d     Dim
		limit int64
		used  int64
	}{{DimRequests, Share(m.Limits.RPM, edges), req}, {DimInputTokens, Share(m.Limits.InputTPM, edges), in},
		{DimOutputTokens, Share(m.Limits.OutputTPM, edges), outTok}}
	for _, x := range declared {
		if x.limit <= 0 || have[x.d] {
			continue
		}
		out = append(out, DimView{Dim: x.d, Limit: x.limit, Remaining: clamp(x.limit-x.used, 0, x.limit)})
	}
	return out
}

// headroom is the smallest remaining/limit over the member's known
// dimensions, 1 when none is known (R-HEAD-4). A declared rpd is one of
// them: this edge's share of it left today (R-HEAD-6).
func (s *memberState) headroom(m *Member, now time.Time, edges int) float64 {
	h := 1.0
	var buf [NumDims]DimView
	for _, d := range s.appendDims(buf[:0], m, now, edges) {
		if f := float64(d.Remaining) / float64(d.Limit); f < h {
			h = f
		}
	}
	if rpd := Share(m.Limits.RPD, edges); rpd > 0 {
		if f := float64(rpd-s.day.today(now, m.Record.dayZone())) / float64(rpd); f < h {
			h = f
		}
	}
	if h < 0 {
		h = 0
	}
	return h
}

// dispatch subtracts one request and the estimated input tokens at once
// (R-HEAD-3), from the header view and into the rolling-minute count.
func (s *memberState) dispatch(now time.Time, inputTokens int64) {
	s.inFlight++
	s.win.add(now, 1, inputTokens, 0)
	for _, d := range [...]Dim{DimRequests, DimInputTokens, DimTokens} {
		h := &s.hdr[d]
		if !h.known {
			continue
		}
		if !h.reset.IsZero() && !now.Before(h.reset) {
			h.remaining, h.reset = h.limit, time.Time{}
		}
		if d == DimRequests {
			h.remaining--
		} else {
			h.remaining -= inputTokens
		}
		if h.remaining < 0 {
			h.remaining = 0
		}
	}
}

// observe replaces the header view with what an answer's headers say
// (R-HEAD-3: the answer overwrites the in-flight estimate).
func (s *memberState) observe(rl *RateLimits) {
	for d := Dim(0); d < NumDims; d++ {
		r := rl[d]
		h := &s.hdr[d]
		if r.HasLimit {
			h.limit = r.Limit
		}
		if r.HasRemaining {
			h.remaining = r.Remaining
		}
		if r.HasReset {
			h.reset = r.Reset
		} else if r.HasRemaining {
			h.reset = time.Time{}
		}
		h.known = h.limit > 0 && (r.HasRemaining || h.known)
	}
}

func clamp(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
