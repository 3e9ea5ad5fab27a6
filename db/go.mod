module weir.dev/db

go 1.26
