package routing

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// RendezvousScore is the weighted rendezvous hashing score of a member for a
// job (R-STICK-3, ROUTING.md appendix). The hash is fixed for every edge of
// every version: the first 8 bytes, big-endian, of SHA-256 over
// job + 0x00 + member name, mapped to u in (0,1) as (x + 0.5) / 2^64. The
// score is −weight / ln(u); the highest score wins.
func RendezvousScore(job, member string, weight uint32) float64 {
	h := sha256.New()
	h.Write([]byte(job))
	h.Write([]byte{0})
	h.Write([]byte(member))
	var sum [sha256.Size]byte
	x := binary.BigEndian.Uint64(h.Sum(sum[:0])[:8])
	u := (float64(x) + 0.5) / (1 << 64)
	if u >= 1 {
		u = math.Nextafter(1, 0)
	}
	w := float64(weight)
	if w <= 0 {
		w = 1
	}
	return -w / math.Log(u)
}

// Rendezvous returns the member that wins job among ms, nil when ms is empty.
// Every edge with the same members picks the same one; adding or removing a
// member moves only the jobs that land on or leave it.
func Rendezvous(job string, ms []*Member) *Member {
	var best *Member
	bestScore := -1.0
	for _, m := range ms {
		s := RendezvousScore(job, m.Name, m.Weight)
		if s > bestScore || (s == bestScore && best != nil && m.Name < best.Name) {
			best, bestScore = m, s
		}
	}
	return best
}

// weightedPick draws one member with probability proportional to its score
// (R-ORDER-3). ROUTING.md says "the member with the highest headroom ×
// weight, ties broken by weighted random choice"; read literally as an argmax
// it would send every call to the heaviest member whenever headroom is
// unknown, which contradicts the same rule's "with no headroom information at
// all this is plain weighted random" and the appendix's "twice the weight
// should carry twice the calls at equal headroom". A draw proportional to
// headroom × weight satisfies all three, so that is what Weir does: members
// with equal headroom share by weight, and a member at 10 % is chosen less
// often than one at 90 % even with a higher weight (unless its weight is more
// than 9× larger). When every score is 0 (all headroom spent), the draw is by
// weight alone: spent headroom reorders, never skips (R-ORDER-2).
func weightedPick(ms []*Member, scores []float64, rnd Rand) *Member {
	total := 0.0
	for _, s := range scores {
		total += s
	}
	if total <= 0 {
		for i, m := range ms {
			scores[i] = float64(max(m.Weight, 1))
			total += scores[i]
		}
	}
	x := rnd.Float64() * total
	for i, s := range scores {
		if x < s {
			return ms[i]
		}
		x -= s
	}
	// Rounding can leave x just past the last positive score.
	for i := len(ms) - 1; i >= 0; i-- {
		if scores[i] > 0 {
			return ms[i]
		}
	}
	return ms[len(ms)-1]
}
