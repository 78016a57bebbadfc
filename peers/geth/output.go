package main

import (
	"encoding/json"
	"io"
	"math"
)

// blockMetrics is one metrics line (docs/workload-format.md), field for
// field and in that order.
type blockMetrics struct {
	Engine          string  `json:"engine"`
	Variant         string  `json:"variant"`
	Workload        string  `json:"workload"`
	Run             int     `json:"run"`
	Block           uint64  `json:"block"`
	GasUsed         uint64  `json:"gas_used"`
	Txs             uint64  `json:"txs"`
	AccountsRead    int     `json:"accounts_read"`
	SlotsRead       int     `json:"slots_read"`
	SlotsWritten    int     `json:"slots_written"`
	AccountsWritten int     `json:"accounts_written"`
	CacheMisses     int64   `json:"cache_misses"`
	ExecutionMs     float64 `json:"execution_ms"`
	StateReadMs     float64 `json:"state_read_ms"`
	StateHashMs     float64 `json:"state_hash_ms"`
	CommitMs        float64 `json:"commit_ms"`
	TotalMs         float64 `json:"total_ms"`
	MgasPerS        float64 `json:"mgas_per_s"`
	BytesRead       *uint64 `json:"bytes_read"`
	BytesWritten    *uint64 `json:"bytes_written"`
	Root            string  `json:"root"`
}

// printJSON writes v as one line.
func printJSON(w io.Writer, v any) error {
	blob, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(blob, '\n'))
	return err
}

// round keeps digits decimals.
func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
