//go:build !ubt

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUBTNotBuilt checks that a geth-peer built without the ubt tag refuses
// --engine ubt with one line saying how to build it.
func TestUBTNotBuilt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	for _, args := range [][]string{
		{"load", "--engine", "ubt", "--db", db, "--workload", tinyDir},
		{"run", "--engine", "ubt", "--db", db, "--workload", tinyDir, "--run", "1"},
	} {
		out, errs, code := cli(args...)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 ||
			!strings.Contains(errs, "built without ubt") || !strings.Contains(errs, "go build -tags ubt") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
