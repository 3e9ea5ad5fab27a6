module weir.dev/systest

go 1.26.0

// go mod tidy ignores go.work: point it at the workspace copies.
replace (
	weir.dev/db v0.0.0-00010101000000-000000000000 => ../db
	weir.dev/listen v0.0.0-00010101000000-000000000000 => ../listen
	weir.dev/migrations v0.0.0-00010101000000-000000000000 => ../migrations
	weir.dev/proto v0.0.0-00010101000000-000000000000 => ../proto
)

require (
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/nats-io/nats-server/v2 v2.15.2
	github.com/nats-io/nats.go v1.55.0
	google.golang.org/protobuf v1.36.12
	weir.dev/db v0.0.0-00010101000000-000000000000
	weir.dev/listen v0.0.0-00010101000000-000000000000
	weir.dev/proto v0.0.0-00010101000000-000000000000
)

require (
	connectrpc.com/connect v1.21.1 // indirect
	github.com/antithesishq/antithesis-sdk-go v0.8.0-default-no-op // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
