package distrib

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/natsconf"
	"weir.dev/routing/natsnames"
)

// The JetStream objects the control plane creates are natsconf's, which
// the edges create alike.

// Buckets are the JetStream objects the control plane uses.
type Buckets struct {
	Config   jetstream.KeyValue
	Views    jetstream.KeyValue
	Affinity jetstream.KeyValue
	Usage    jetstream.Stream
}

// Setup creates every bucket and the usage stream with natsconf's settings
// on replicas servers (natsconf: below 1 means 1),
// or updates them to those settings; run again, it changes nothing. It is
// what the control plane does at start, before anything else on NATS.
func Setup(ctx context.Context, js jetstream.JetStream, replicas int) (Buckets, error) {
	var b Buckets
	var err error
	if b.Config, err = js.CreateOrUpdateKeyValue(ctx, natsconf.ConfigBucketConfig(replicas)); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", natsnames.ConfigBucket, err)
	}
	if b.Views, err = js.CreateOrUpdateKeyValue(ctx, natsconf.ViewsBucketConfig(replicas)); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", natsnames.ViewsBucket, err)
	}
	if b.Affinity, err = js.CreateOrUpdateKeyValue(ctx, natsconf.AffinityBucketConfig(replicas)); err != nil {
		return Buckets{}, fmt.Errorf("distrib: bucket %s: %w", natsnames.AffinityBucket, err)
	}
	if b.Usage, err = js.CreateOrUpdateStream(ctx, natsconf.UsageStreamConfig(replicas)); err != nil {
		return Buckets{}, fmt.Errorf("distrib: stream %s: %w", natsnames.UsageStream, err)
	}
	return b, nil
}
