package secretbox

import (
	crand "crypto/rand"
	"io"
)

// cryptoRand is the default source of keys and nonces.
func cryptoRand() io.Reader { return crand.Reader }
