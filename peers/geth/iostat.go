package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ethereum/go-ethereum/metrics"
)

// procIO is the storage I/O of this process (/proc/self/io): bytes it
// caused to be read from or written to the block device, all threads
// included (Pebble's flushes and compactions run in this process).
type procIO struct {
	ok                bool
	readBytes, writes uint64
}

func readProcIO() procIO {
	blob, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return procIO{}
	}
	var p procIO
	var seen int
	for _, line := range strings.Split(string(blob), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "read_bytes":
			p.readBytes = v
			seen++
		case "write_bytes":
			p.writes = v
			seen++
		}
	}
	p.ok = seen == 2
	return p
}

// delta returns b-a as the metrics' nullable byte counts.
func ioDelta(a, b procIO) (read, written *uint64) {
	if !a.ok || !b.ok {
		return nil, nil
	}
	r, w := b.readBytes-a.readBytes, b.writes-a.writes
	return &r, &w
}

// pathdbMisses is geth's own count of state reads that went below the path
// database's caches to Pebble: clean-cache misses for trie nodes
// (pathdb/clean/node/miss) and for flat-state entries
// (pathdb/clean/state/miss). The meters count whether or not metrics
// reporting is enabled.
func pathdbMisses() int64 {
	var total int64
	for _, name := range []string{"pathdb/clean/node/miss", "pathdb/clean/state/miss"} {
		if m, ok := metrics.DefaultRegistry.Get(name).(*metrics.Meter); ok {
			total += m.Snapshot().Count()
		}
	}
	return total
}

// flushEvidence is what --verify-flush reports around each commit: the
// growth of Pebble's WAL files and the device's own counters
// (/proc/diskstats: sectors written, flush requests completed) for the
// device holding the database.
type flushEvidence struct {
	walBytes       int64
	sectorsWritten uint64
	writesDone     uint64
	flushes        uint64
	ok             bool
}

func readFlushEvidence(dbDir string) flushEvidence {
	var ev flushEvidence
	logs, _ := filepath.Glob(filepath.Join(dbDir, kvDirName, "*.log"))
	for _, l := range logs {
		if info, err := os.Stat(l); err == nil {
			ev.walBytes += info.Size()
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dbDir, &st); err != nil {
		return ev
	}
	major, minor := (st.Dev>>8)&0xfff, (st.Dev&0xff)|((st.Dev>>12)&0xfff00)
	blob, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return ev
	}
	sc := bufio.NewScanner(bytes.NewReader(blob))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 14 || f[0] != fmt.Sprint(major) || f[1] != fmt.Sprint(minor) {
			continue
		}
		ev.writesDone, _ = strconv.ParseUint(f[7], 10, 64)
		ev.sectorsWritten, _ = strconv.ParseUint(f[9], 10, 64)
		if len(f) >= 20 {
			ev.flushes, _ = strconv.ParseUint(f[18], 10, 64)
		}
		ev.ok = true
	}
	return ev
}

// flushReport is the stderr line --verify-flush prints per block.
type flushReport struct {
	Block               uint64 `json:"block"`
	WALBytesAdded       int64  `json:"wal_bytes_added"`
	DeviceWrites        uint64 `json:"device_writes"`
	DeviceBytesWritten  uint64 `json:"device_bytes_written"`
	DeviceFlushRequests uint64 `json:"device_flush_requests"`
}

func newFlushReport(block uint64, a, b flushEvidence) *flushReport {
	return &flushReport{
		Block:               block,
		WALBytesAdded:       b.walBytes - a.walBytes,
		DeviceWrites:        b.writesDone - a.writesDone,
		DeviceBytesWritten:  (b.sectorsWritten - a.sectorsWritten) * 512,
		DeviceFlushRequests: b.flushes - a.flushes,
	}
}
