module weir.dev/web

go 1.26.0

require (
	github.com/a-h/templ v0.3.1100
	weir.dev/routing v0.0.0-00010101000000-000000000000
)

require (
	google.golang.org/protobuf v1.36.12 // indirect
	weir.dev/proto v0.0.0-00010101000000-000000000000 // indirect
)

replace weir.dev/routing => ../routing

replace weir.dev/proto => ../proto
