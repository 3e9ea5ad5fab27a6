package routing

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxJobIDLen bounds a job id; longer ids are hashed whole all the same.
const MaxJobIDLen = 512

// JobID picks a call's job id by R-STICK-2: the x-weir-job header, else
// x-weir-conversation, else the body's prompt_cache_key (OpenAI formats) or
// metadata.user_id (Anthropic format), whichever the edge read from the body.
// "" means the call has no job.
func JobID(jobHeader, conversationHeader, bodyKey string) string {
	switch {
	case jobHeader != "":
		return jobHeader
	case conversationHeader != "":
		return conversationHeader
	}
	return bodyKey
}

// JobHash is the stable key of a tenant's job in shared affinity
// (R-STICK-3) and in call records: hex of the first 16 bytes of
// SHA-256(tenant id + 0x00 + job id). The raw job id never leaves the edge.
func JobHash(tenantID, job string) string {
	h := sha256.New()
	h.Write([]byte(tenantID))
	h.Write([]byte{0})
	h.Write([]byte(job))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}
