package console

import "net/http"

// NewClientsForTest exposes the in-process clients to the external tests.
func NewClientsForTest(api http.Handler, token string) *Clients { return newClients(api, token) }
