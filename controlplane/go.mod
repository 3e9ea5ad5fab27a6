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
	github.com/google/go-cmp v0.7.0
	github.com/jackc/pgx/v5 v5.12.0
	google.golang.org/protobuf v1.36.12
	weir.dev/db v0.0.0-00010101000000-000000000000
	weir.dev/migrations v0.0.0-00010101000000-000000000000
	weir.dev/proto v0.0.0-00010101000000-000000000000
)

require (
	github.com/golang-migrate/migrate/v4 v4.20.1 // indirect
	github.com/jackc/pgerrcode v0.0.0-20220416144525-469b46aa5efa // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
