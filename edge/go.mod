module weir.dev/edge

go 1.26.0

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/google/go-cmp v0.7.0
	golang.org/x/oauth2 v0.38.0
	google.golang.org/protobuf v1.36.12
	weir.dev/proto v0.0.0-00010101000000-000000000000
)

require (
	github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream v1.7.27 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
)

replace weir.dev/proto => ../proto
