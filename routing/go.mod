module weir.dev/routing

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	google.golang.org/protobuf v1.36.12
	weir.dev/proto v0.0.0-00010101000000-000000000000
)

replace weir.dev/proto => ../proto
