//go:build !ubt

package main

import "io"

// errNoUBT is what --engine ubt fails with in a geth-peer built without the
// ubt build tag (a plain `go build`, which needs no Rust library).
var errNoUBT = badInput("--engine ubt: this geth-peer was built without ubt; build with `go build -tags ubt` after bindings/go/build.sh")

func cmdLoadUBT(*command, *workloadInfo, io.Writer) error { return errNoUBT }

func cmdRunUBT(*command, *workloadInfo, io.Writer, io.Writer) error { return errNoUBT }
