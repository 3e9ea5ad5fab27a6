module weir.dev/edge

go 1.26
