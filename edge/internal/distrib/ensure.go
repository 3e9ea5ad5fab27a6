package distrib

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ensureKV returns the bucket cfg names, creating it with cfg when it is
// missing. An existing bucket is used as it is: the control plane owns its
// settings.
func ensureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("distrib: bucket %s: %w", cfg.Bucket, err)
	}
	kv, err = js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		kv, err = js.KeyValue(ctx, cfg.Bucket) // another process created it first
	}
	if err != nil {
		return nil, fmt.Errorf("distrib: creating bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// ensureStream creates the stream cfg names when it is missing; an existing
// stream is left as it is.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	_, err := js.Stream(ctx, cfg.Name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("distrib: stream %s: %w", cfg.Name, err)
	}
	_, err = js.CreateStream(ctx, cfg)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("distrib: creating stream %s: %w", cfg.Name, err)
	}
	return nil
}
