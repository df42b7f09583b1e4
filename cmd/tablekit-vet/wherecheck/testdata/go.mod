module samples

go 1.26.0
