module weir.dev/migrations

go 1.26
