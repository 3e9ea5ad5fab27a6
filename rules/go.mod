module weir.dev/rules

go 1.26
