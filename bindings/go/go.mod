module github.com/ubt/bindings/go

go 1.25
