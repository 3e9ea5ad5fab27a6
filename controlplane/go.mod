module weir.dev/controlplane

go 1.26.0

// go mod tidy ignores go.work: point it at the workspace copies.
replace (
	weir.dev/db v0.0.0-00010101000000-000000000000 => ../db
	weir.dev/migrations v0.0.0-00010101000000-000000000000 => ../migrations
	weir.dev/proto v0.0.0-00010101000000-000000000000 => ../proto
)

require (
	connectrpc.com/connect v1.21.1
	connectrpc.com/grpchealth v1.5.0
	connectrpc.com/grpcreflect v1.3.1
	connectrpc.com/otelconnect v0.12.0
	github.com/a-h/templ v0.3.1100
	github.com/google/go-cmp v0.7.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/nats-io/nats-server/v2 v2.15.2
	github.com/nats-io/nats.go v1.55.0
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
	golang.org/x/net v0.61.0
	google.golang.org/protobuf v1.36.12
	weir.dev/db v0.0.0-00010101000000-000000000000
	weir.dev/migrations v0.0.0-00010101000000-000000000000
	weir.dev/proto v0.0.0-00010101000000-000000000000
	weir.dev/web v0.0.0-00010101000000-000000000000
)

require (
	connectrpc.com/connect/v2 v2.0.0 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.30.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.47.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.47.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/sdk v1.47.0 // indirect
	go.opentelemetry.io/proto/otlp v1.11.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/grpc v1.83.2 // indirect
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.8.0-default-no-op // indirect
	github.com/golang-migrate/migrate/v4 v4.20.1 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/jackc/pgerrcode v0.0.0-20220416144525-469b46aa5efa // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.16.0
	weir.dev/listen v0.0.0-00010101000000-000000000000
	weir.dev/natsconf v0.0.0-00010101000000-000000000000
	weir.dev/routing v0.0.0-00010101000000-000000000000
	weir.dev/tracing v0.0.0-00010101000000-000000000000
)

replace weir.dev/routing v0.0.0-00010101000000-000000000000 => ../routing

replace weir.dev/listen v0.0.0-00010101000000-000000000000 => ../listen

replace weir.dev/web v0.0.0-00010101000000-000000000000 => ../web

replace weir.dev/natsconf => ../natsconf

replace weir.dev/tracing => ../tracing
