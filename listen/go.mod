module weir.dev/listen

go 1.26
