module weir.dev/web

go 1.26
