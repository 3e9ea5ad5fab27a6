package admin

import (
	"encoding/base64"
	"strconv"
	"strings"

	"weir.dev/controlplane/internal/admin/apierr"
)

// Paging (common.proto): page_size 0 means 100, at most 1000; page_token is
// opaque. Lists that the store returns whole are paged by offset; the token
// is "o:<offset>" in base64url.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageSize checks a page_size and returns the size to use.
func pageSize(ps *apierr.Problems, n int32) int {
	switch {
	case n < 0:
		ps.Add("page_size", apierr.CodeNegative, "page_size must not be negative")
		return defaultPageSize
	case n == 0:
		return defaultPageSize
	case n > maxPageSize:
		ps.Addf("page_size", apierr.CodeOutOfRange, "page_size is at most %d", maxPageSize)
		return maxPageSize
	}
	return int(n)
}

// offsetToken decodes an offset page token ("" is offset 0).
func offsetToken(ps *apierr.Problems, tok string) int {
	if tok == "" {
		return 0
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		if s, ok := strings.CutPrefix(string(b), "o:"); ok {
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				return n
			}
		}
	}
	ps.Add("page_token", apierr.CodeInvalidValue, "page_token is not a token this server returned")
	return 0
}

// page returns the items of one page and the next page's token.
func page[T any](items []T, offset, size int) ([]T, string) {
	if offset >= len(items) {
		return nil, ""
	}
	end := min(offset+size, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(end)))
	}
	return items[offset:end], next
}
