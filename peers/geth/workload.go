package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Workload modes (workload.json "mode").
const (
	modeAccounts = "accounts"
	modeRaw      = "raw"
)

// workloadInfo is workload.json (docs/workload-format.md).
type workloadInfo struct {
	Format       int    `json:"format"`
	Name         string `json:"name"`
	Mode         string `json:"mode"`
	Seed         uint64 `json:"seed"`
	Description  string `json:"description"`
	StateRecords uint64 `json:"state_records"`
	Blocks       uint64 `json:"blocks"`

	dir string
}

func (w *workloadInfo) statePath() string  { return filepath.Join(w.dir, "state.jsonl") }
func (w *workloadInfo) blocksPath() string { return filepath.Join(w.dir, "blocks.jsonl") }

// readWorkload reads and checks DIR/workload.json.
func readWorkload(dir string) (*workloadInfo, error) {
	if dir == "" {
		return nil, badInput("--workload is required")
	}
	path := filepath.Join(dir, "workload.json")
	blob, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, badInput("%s: no such file (is %s a workload directory?)", path, dir)
	}
	if err != nil {
		return nil, err
	}
	var w workloadInfo
	if err := json.Unmarshal(blob, &w); err != nil {
		return nil, badInput("%s: %v", path, err)
	}
	if w.Format != 1 {
		return nil, badInput("%s: format %d, expected 1", path, w.Format)
	}
	if w.Mode != modeAccounts && w.Mode != modeRaw {
		return nil, badInput("%s: mode %q, expected %q or %q", path, w.Mode, modeAccounts, modeRaw)
	}
	if w.Name == "" {
		return nil, badInput("%s: empty name", path)
	}
	w.dir = dir
	return &w, nil
}

// openInput opens a workload file; a missing file is bad input.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, badInput("%s: no such file", path)
	}
	return f, err
}

// lineError is a malformed line of a workload file.
func lineError(path string, line int, format string, args ...any) error {
	return badInput("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
}
