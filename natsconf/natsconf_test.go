package natsconf

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/routing/natsnames"
	"weir.dev/routing/rules"
)

// The usage stream keeps every record until it ages out: no byte or
// message limit could drop records not yet ingested.
func TestUsageStreamOnlyAgeLimited(t *testing.T) {
	c := UsageStreamConfig(1)
	if c.Name != natsnames.UsageStream || c.Retention != jetstream.LimitsPolicy || c.Storage != jetstream.FileStorage {
		t.Fatalf("stream %+v", c)
	}
	if c.MaxAge != natsnames.UsageMaxAge || c.MaxBytes > 0 || c.MaxMsgs > 0 || c.Duplicates != natsnames.UsageDuplicateWindow {
		t.Errorf("limits: max age %v, bytes %d, msgs %d, duplicates %v", c.MaxAge, c.MaxBytes, c.MaxMsgs, c.Duplicates)
	}
}

func TestBucketsExpireAsNamed(t *testing.T) {
	if c := ViewsBucketConfig(1); c.Bucket != natsnames.ViewsBucket || c.TTL != natsnames.ViewsMaxAge {
		t.Errorf("views %+v", c)
	}
	if c := AffinityBucketConfig(1); c.Bucket != natsnames.AffinityBucket || c.TTL != natsnames.AffinityTTL {
		t.Errorf("affinity %+v", c)
	}
	if c := ConfigBucketConfig(1); c.Bucket != natsnames.ConfigBucket || c.TTL != 0 || c.History != 1 {
		t.Errorf("config %+v", c)
	}
}

// Every object is on as many servers as asked, and on one when asked for
// none (a single server).
func TestReplicas(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 3, 5} {
		want := max(n, 1)
		kvs := []jetstream.KeyValueConfig{ConfigBucketConfig(n), ViewsBucketConfig(n), AffinityBucketConfig(n)}
		for _, c := range kvs {
			if c.Replicas != want {
				t.Errorf("bucket %s with %d: replicas %d, want %d", c.Bucket, n, c.Replicas, want)
			}
		}
		if c := UsageStreamConfig(n); c.Replicas != want {
			t.Errorf("stream with %d: replicas %d, want %d", n, c.Replicas, want)
		}
	}
}

// One option per way of authenticating or securing that a gives.
func TestAuthOptions(t *testing.T) {
	for _, tc := range []struct {
		a    rules.NATSAuth
		want int
	}{
		{rules.NATSAuth{}, 0},
		{rules.NATSAuth{User: "u", Password: "p"}, 1},
		{rules.NATSAuth{Creds: "c", CA: "ca", Cert: "c", Key: "k"}, 3},
	} {
		if got := len(AuthOptions(tc.a)); got != tc.want {
			t.Errorf("%+v: %d options, want %d", tc.a, got, tc.want)
		}
	}
}
