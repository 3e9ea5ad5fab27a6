module weir.dev/controlplane

go 1.26
