package provider

import (
	"context"
	"crypto/rand"
	"testing"

	"weir.dev/controlplane/internal/snapshot"
	"weir.dev/db/sqlc"
)

// TestSnapshotBuildsFromWhatTheServicesStore checks the rows these
// services write against the snapshot builder that reads them: the seed's
// records come out as pools with their members, auth and prices.
func TestSnapshotBuildsFromWhatTheServicesStore(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	seed(t, h, "alice")
	rows, err := snapshot.LoadTenant(ctx, h.st.Pool(), h.tenants["acme"].ID)
	if err != nil {
		t.Fatal(err)
	}
	open := func(sqlc.Secret) ([]byte, error) { return []byte("value"), nil }
	snap, err := snapshot.BuildTenant(rows, open, make([]byte, 32), rand.Reader)
	if err != nil {
		t.Fatalf("BuildTenant: %v", err)
	}
	if len(snap.GetRecords()) != 2 {
		t.Fatalf("records = %v", snap.GetRecords())
	}
	for _, r := range snap.GetRecords() {
		if r.GetBaseUrl() != "" || len(r.GetMembers()) != 2 {
			t.Errorf("%s: base_url %q, %d members", r.GetName(), r.GetBaseUrl(), len(r.GetMembers()))
		}
		for _, m := range r.GetMembers() {
			if r.GetName() == "bedrock-eu" && (m.GetAuth().GetAccessKeySecret() != "aws" || m.GetAuth().GetAwsRegion() == "" || len(m.GetPrices()) != 1) {
				t.Errorf("bedrock member %s = %v", m.GetName(), m)
			}
			if r.GetName() == "azure-eu" && (m.GetKeySecret() == "" || m.GetAuth() != nil || m.GetRegion() == "") {
				t.Errorf("azure member %s = %v", m.GetName(), m)
			}
		}
	}
	if len(snap.GetSecrets()) != 3 {
		t.Errorf("secrets = %d, want the 3 the records name", len(snap.GetSecrets()))
	}
}
