package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie/bintrie"
	"github.com/holiman/uint256"
)

const (
	tinyDir    = "testdata/tiny"
	tinyRawDir = "testdata/tiny-raw"
)

// engines are the configurations the tests cover.
var engines = []engineOpts{
	{engine: engineBintrie, groupDepth: 1, cacheMB: 64, chunk: 1_000_000},
	{engine: engineBintrie, groupDepth: 5, cacheMB: 64, chunk: 1_000_000},
	{engine: engineBintrie, groupDepth: 8, cacheMB: 64, chunk: 1_000_000},
	{engine: engineMPT, cacheMB: 64, chunk: 1_000_000},
}

func engineArgs(o engineOpts) []string {
	args := []string{"--engine", o.engine, "--cache", fmt.Sprint(o.cacheMB)}
	if o.engine != engineMPT {
		args = append(args, "--group-depth", fmt.Sprint(o.groupDepth))
	}
	if o.engine == engineUBT && !o.flatIndex {
		args = append(args, "--flat-index", "off")
	}
	return args
}

// cli runs the command line in-process and returns stdout, stderr and the status.
func cli(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := runCLI(args, &out, &errb)
	return out.String(), errb.String(), code
}

func mustWorkload(t *testing.T, dir string) *workloadInfo {
	t.Helper()
	w, err := readWorkload(dir)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func expectedRoot(t *testing.T, dir string) common.Hash {
	t.Helper()
	blob, err := os.ReadFile(filepath.Join(dir, "expected_root.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return common.HexToHash(strings.TrimSpace(string(blob)))
}

func expectedBlockRoots(t *testing.T, dir string) []common.Hash {
	t.Helper()
	blob, err := os.ReadFile(filepath.Join(dir, "expected_block_roots.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var roots []common.Hash
	for _, l := range strings.Fields(string(blob)) {
		roots = append(roots, common.HexToHash(l))
	}
	return roots
}

// readBlocks parses a workload's blocks.
func readBlocks(t *testing.T, w *workloadInfo) []*block {
	t.Helper()
	f, err := os.Open(w.blocksPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bs []*block
	err = forEachLine(f, func(line []byte, _ int) error {
		b, err := parseBlock(line, w.Mode)
		bs = append(bs, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// modelRoots computes the root after the load and after every block in
// memory, without StateDB for the binary trie: ubt's semantics spelled with
// geth's trie calls (an account write is UpdateAccount with the written
// code size; a slot write of zero is DeleteStorage, which keeps a zero
// leaf). For the MPT it uses a StateDB over an in-memory database.
func modelRoots(t *testing.T, w *workloadInfo, o engineOpts) []common.Hash {
	t.Helper()
	tdb := memoryTrieDB(&o)
	defer tdb.Close()
	var (
		roots []common.Hash
		l     stateLoader
		err   error
	)
	switch {
	case w.Mode == modeRaw:
		l, err = newRawLoader(tdb, &o, noCommit)
	case o.engine == engineBintrie:
		l, err = newBintrieLoader(tdb, o.groupDepth, nil, noCommit)
	default:
		sdb := state.NewDatabase(tdb, state.NewCodeDB(rawdb.NewMemoryDatabase()))
		l, err = newStatedbLoader(sdb, types.EmptyRootHash, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamState(w, 7, l.add); err != nil {
		t.Fatal(err)
	}
	roots = append(roots, l.hash())
	for _, b := range readBlocks(t, w) {
		switch l := l.(type) {
		case *rawLoader:
			var keys []common.Hash
			var vals [][]byte
			for _, wr := range b.writes {
				keys = append(keys, wr.key)
				vals = append(vals, bytes.Clone(wr.value[:]))
			}
			if err := l.tr.update(keys, vals); err != nil {
				t.Fatal(err)
			}
		case *bintrieLoader:
			for _, wr := range b.writes {
				var err error
				switch {
				case wr.kind == recAccount:
					acct := &types.StateAccount{Nonce: wr.nonce, Balance: new(uint256.Int).Set(&wr.balance), CodeHash: wr.codeHash.Bytes()}
					err = l.tr.UpdateAccount(wr.addr, acct, int(wr.codeSize))
				case wr.value == (common.Hash{}):
					err = l.tr.DeleteStorage(wr.addr, wr.key[:])
				default:
					err = l.tr.UpdateStorage(wr.addr, wr.key[:], common.TrimLeftZeroes(wr.value[:]))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		case *statedbLoader:
			for _, wr := range b.writes {
				if wr.kind == recAccount {
					l.st.SetNonce(wr.addr, wr.nonce, tracing.NonceChangeUnspecified)
					l.st.SetBalance(wr.addr, new(uint256.Int).Set(&wr.balance), tracing.BalanceChangeUnspecified)
				} else {
					l.st.SetState(wr.addr, wr.key, wr.value)
				}
			}
		}
		roots = append(roots, l.hash())
	}
	return roots
}

// metricFields is the metrics line of docs/workload-format.md, in order.
var metricFields = []string{"engine", "variant", "workload", "run", "block", "gas_used", "txs",
	"accounts_read", "slots_read", "slots_written", "accounts_written", "cache_misses",
	"execution_ms", "state_read_ms", "state_hash_ms", "commit_ms", "total_ms", "mgas_per_s",
	"bytes_read", "bytes_written", "root"}

// jsonKeys returns the keys of a one-line JSON object in order.
func jsonKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", line)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// loadAndRun loads and runs a workload with the CLI and returns the load
// root and the block roots.
func loadAndRun(t *testing.T, wdir string, o engineOpts, db string) (common.Hash, []common.Hash) {
	t.Helper()
	out, errs, code := cli(append(append([]string{"load"}, engineArgs(o)...), "--db", db, "--workload", wdir)...)
	if code != 0 {
		t.Fatalf("load: exit %d: %s", code, errs)
	}
	var ev loadEvent
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("load output %q: %v", out, err)
	}
	want := loadEvent{Event: "load", Engine: "geth-" + o.engine, Variant: o.variant(), Records: mustWorkload(t, wdir).StateRecords, Root: ev.Root}
	if ev.Seconds <= 0 || ev.DiskBytes == 0 {
		t.Errorf("load: seconds %v, disk_bytes %v", ev.Seconds, ev.DiskBytes)
	}
	if ev.CompactSeconds < 0 {
		t.Errorf("negative compact_seconds %v", ev.CompactSeconds)
	}
	ev.Seconds, ev.DiskBytes, ev.CompactSeconds = 0, 0, 0
	if ev != want {
		t.Errorf("load event %+v, want %+v", ev, want)
	}
	if keys := jsonKeys(t, out); !reflect.DeepEqual(keys, []string{"event", "engine", "variant", "records", "seconds", "root", "disk_bytes", "compact_seconds"}) {
		t.Errorf("load keys %v", keys)
	}

	out, errs, code = cli(append(append([]string{"run"}, engineArgs(o)...), "--db", db, "--workload", wdir, "--run", "2")...)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	w := mustWorkload(t, wdir)
	blocks := readBlocks(t, w)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(blocks) {
		t.Fatalf("run printed %d lines for %d blocks", len(lines), len(blocks))
	}
	var roots []common.Hash
	for i, line := range lines {
		if keys := jsonKeys(t, line); !reflect.DeepEqual(keys, metricFields) {
			t.Fatalf("metrics keys %v, want %v", keys, metricFields)
		}
		var m blockMetrics
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		b := blocks[i]
		ar, sr := counts(b.reads)
		aw, sw := counts(b.writes)
		if m.Engine != o.engineName() || m.Variant != o.variant() || m.Workload != w.Name || m.Run != 2 ||
			m.Block != b.number || m.GasUsed != b.gasUsed || m.Txs != b.txs ||
			m.AccountsRead != ar || m.SlotsRead != sr || m.AccountsWritten != aw || m.SlotsWritten != sw ||
			m.ExecutionMs != 0 || m.TotalMs <= 0 || m.CacheMisses < 0 || (o.engine != engineUBT && m.CacheMisses == 0) {
			t.Errorf("block %d metrics %s", b.number, line)
		}
		roots = append(roots, common.HexToHash(m.Root))
	}
	return common.HexToHash(ev.Root), roots
}

// checkHead reopens a database and checks its persisted root.
func checkHead(t *testing.T, db string, o engineOpts, w *workloadInfo, want common.Hash) {
	t.Helper()
	s, _, err := openStore(db, &o, w)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if got := s.head(); got != want {
		t.Fatalf("reopened head %x, want %x", got, want)
	}
	if w.Mode == modeRaw {
		tr, err := openRawTrie(s.tdb, &o, want)
		if err != nil {
			t.Fatal(err)
		}
		if tr.hash() != want {
			t.Fatalf("reopened trie hashes to %x, want %x", tr.hash(), want)
		}
		return
	}
	st, err := state.New(want, s.sdb)
	if err != nil {
		t.Fatal(err)
	}
	if root := st.IntermediateRoot(stateRules); root != want {
		t.Fatalf("reopened state hashes to %x, want %x", root, want)
	}
}

func TestLoadRunReopen(t *testing.T) {
	for _, wdir := range []string{tinyDir, tinyRawDir} {
		w := mustWorkload(t, wdir)
		var bintrieRoots []common.Hash
		for _, o := range engines {
			t.Run(w.Name+"/"+o.variant(), func(t *testing.T) {
				model := modelRoots(t, w, o)
				db := filepath.Join(t.TempDir(), "db")
				loadRoot, roots := loadAndRun(t, wdir, o, db)
				got := append([]common.Hash{loadRoot}, roots...)
				if !reflect.DeepEqual(got, model) {
					t.Fatalf("roots %x\nmodel %x", got, model)
				}
				checkHead(t, db, o, w, roots[len(roots)-1])

				// A second load and run gives the same roots.
				db2 := filepath.Join(t.TempDir(), "db")
				loadRoot2, roots2 := loadAndRun(t, wdir, o, db2)
				if loadRoot2 != loadRoot || !reflect.DeepEqual(roots2, roots) {
					t.Fatalf("second load/run: %x %x, first %x %x", loadRoot2, roots2, loadRoot, roots)
				}
				if o.engine == engineBintrie {
					out, errs, code := cli("root", "--engine", "bintrie", "--group-depth", fmt.Sprint(o.groupDepth), "--workload", wdir)
					if code != 0 || strings.TrimSpace(out) != loadRoot.Hex() {
						t.Fatalf("root printed %q (exit %d, %s), load root %s", out, code, errs, loadRoot.Hex())
					}
					if loadRoot != expectedRoot(t, wdir) {
						t.Fatalf("load root %x, expected_root.txt %x", loadRoot, expectedRoot(t, wdir))
					}
					if want := expectedBlockRoots(t, wdir); !reflect.DeepEqual(roots, want) {
						t.Fatalf("block roots %x, expected_block_roots.txt %x", roots, want)
					}
					// The root does not depend on the group depth.
					if bintrieRoots == nil {
						bintrieRoots = got
					} else if !reflect.DeepEqual(got, bintrieRoots) {
						t.Fatalf("group depth %d roots %x differ from %x", o.groupDepth, got, bintrieRoots)
					}
				}
			})
		}
	}
}

// TestBintrieLoaderMatchesStateDB checks that the direct trie loader gives
// the root geth's StateDB gives for the same records.
func TestBintrieLoaderMatchesStateDB(t *testing.T) {
	w := mustWorkload(t, tinyDir)
	o := engineOpts{engine: engineBintrie, groupDepth: 5}
	tdb := memoryTrieDB(&o)
	defer tdb.Close()
	sdb := state.NewDatabase(tdb, state.NewCodeDB(rawdb.NewMemoryDatabase()))
	l, err := newStatedbLoader(sdb, types.EmptyBinaryHash, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamState(w, 3, l.add); err != nil {
		t.Fatal(err)
	}
	if got, want := l.hash(), expectedRoot(t, tinyDir); got != want {
		t.Fatalf("StateDB root %x, trie loader root %x", got, want)
	}
}

// TestRootCommand checks the root command against expected_root.txt at
// every group depth, and the chunked load against one commit.
func TestRootCommand(t *testing.T) {
	for _, wdir := range []string{tinyDir, tinyRawDir} {
		want := expectedRoot(t, wdir)
		for gd := 1; gd <= 8; gd++ {
			out, errs, code := cli("root", "--engine", "bintrie", "--group-depth", fmt.Sprint(gd), "--workload", wdir)
			if code != 0 || strings.TrimSpace(out) != want.Hex() {
				t.Fatalf("%s gd %d: %q (exit %d, %s), want %s", wdir, gd, out, code, errs, want.Hex())
			}
		}
		for _, o := range []string{"bintrie", "mpt"} {
			db1, db2 := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			out1, _, c1 := cli("load", "--engine", o, "--db", db1, "--workload", wdir)
			out2, _, c2 := cli("load", "--engine", o, "--db", db2, "--workload", wdir, "--chunk", "7")
			var e1, e2 loadEvent
			json.Unmarshal([]byte(out1), &e1)
			json.Unmarshal([]byte(out2), &e2)
			if c1 != 0 || c2 != 0 || e1.Root == "" || e1.Root != e2.Root {
				t.Fatalf("%s %s: one commit %q, chunks of 7 %q", wdir, o, out1, out2)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "workload.json"), []byte(`{"format":1,"name":"bad","mode":"accounts"}`), 0o644)
	os.WriteFile(filepath.Join(bad, "state.jsonl"), []byte("{\"account\":\"0x12\",\"nonce\":0,\"balance\":\"0\",\"code\":\"0x\"}\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "blocks.jsonl"), []byte("{\"block\":1,\"reads\":[\"x:1\"]}\n"), 0o644)
	loaded := filepath.Join(tmp, "loaded")
	if _, errs, code := cli("load", "--engine", "bintrie", "--db", loaded, "--workload", tinyDir); code != 0 {
		t.Fatal(errs)
	}
	notDir := filepath.Join(tmp, "file")
	os.WriteFile(notDir, []byte("x"), 0o644)

	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "missing command"},
		{[]string{"frob"}, 2, "unknown command"},
		{[]string{"load", "--db", "x", "--workload", tinyDir}, 2, "--engine is required"},
		{[]string{"load", "--engine", "verkle", "--db", "x", "--workload", tinyDir}, 2, "expected bintrie, mpt or ubt"},
		{[]string{"load", "--engine", "bintrie", "--group-depth", "9", "--db", "x", "--workload", tinyDir}, 2, "must be 1..8"},
		{[]string{"load", "--engine", "mpt", "--group-depth", "5", "--db", "x", "--workload", tinyDir}, 2, "bintrie and ubt only"},
		{[]string{"load", "--engine", "ubt", "--group-depth", "9", "--db", "x", "--workload", tinyDir}, 2, "must be 1..8"},
		{[]string{"run", "--engine", "ubt", "--db", "x", "--workload", tinyDir, "--run", "1", "--witness", "w"}, 2, "bintrie only"},
		{[]string{"run", "--engine", "ubt", "--db", "x", "--workload", tinyDir, "--run", "1", "--verify-flush"}, 2, "bintrie and mpt only"},
		{[]string{"root", "--engine", "ubt", "--workload", tinyDir}, 2, "only --engine bintrie"},
		{[]string{"load", "--engine", "mpt", "--workload", tinyDir}, 2, "--db is required"},
		{[]string{"run", "--engine", "mpt", "--db", "x", "--workload", tinyDir}, 2, "--run is required"},
		{[]string{"root", "--engine", "mpt", "--workload", tinyDir}, 2, "only --engine bintrie"},
		{[]string{"load", "--engine", "mpt", "--bogus", "--db", "x", "--workload", tinyDir}, 2, "bogus"},
		{[]string{"load", "--engine", "mpt", "--db", filepath.Join(tmp, "n1"), "--workload", filepath.Join(tmp, "nowhere")}, 2, "workload.json: no such file"},
		{[]string{"load", "--engine", "mpt", "--db", filepath.Join(tmp, "n2"), "--workload", bad}, 2, "state.jsonl:1: account:"},
		{[]string{"root", "--engine", "bintrie", "--workload", bad}, 2, "state.jsonl:1: account:"},
		{[]string{"load", "--engine", "bintrie", "--db", loaded, "--workload", tinyDir}, 2, "not empty"},
		{[]string{"run", "--engine", "mpt", "--db", loaded, "--workload", tinyDir, "--run", "1"}, 2, "loaded with --engine bintrie"},
		{[]string{"run", "--engine", "bintrie", "--group-depth", "6", "--db", loaded, "--workload", tinyDir, "--run", "1"}, 2, "--group-depth 5"},
		{[]string{"run", "--engine", "bintrie", "--db", loaded, "--workload", tinyRawDir, "--run", "1"}, 2, "accounts-mode state"},
		{[]string{"run", "--engine", "bintrie", "--db", filepath.Join(tmp, "none"), "--workload", tinyDir, "--run", "1"}, 2, "run load first"},
		{[]string{"run", "--engine", "bintrie", "--db", loaded, "--workload", bad, "--run", "1"}, 2, "blocks.jsonl:1:"},
		{[]string{"load", "--engine", "mpt", "--db", filepath.Join(notDir, "db"), "--workload", tinyDir}, 1, ""},
	}
	for _, c := range cases {
		out, errs, code := cli(c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d and %q", c.args, code, errs, out, c.code, c.msg)
		}
	}
}

func TestScanFlat(t *testing.T) {
	lines := []string{
		`{"raw":"0x01","value":"0x02"}`,
		` { "account" : "0xab", "nonce" : 12 , "balance":"34","code":"0x" } `,
		`{}`,
	}
	for _, l := range lines {
		fast, err := scanFlat([]byte(l), nil)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		slow, err := decodeFlat([]byte(l), nil)
		if err != nil {
			t.Fatal(err)
		}
		asMap := func(ms []member) map[string]string {
			m := map[string]string{}
			for _, x := range ms {
				m[string(x.name)] = fmt.Sprintf("%s/%v", x.val, x.isString)
			}
			return m
		}
		if !reflect.DeepEqual(asMap(fast), asMap(slow)) {
			t.Fatalf("%s: fast %v slow %v", l, asMap(fast), asMap(slow))
		}
	}
	// Escapes and nested values go to the slow path.
	for _, l := range []string{`{"raw":"0x\u0030"}`, `{"a":[1]}`, `{"a":1} x`, `{"a":-1}`} {
		if _, err := scanFlat([]byte(l), nil); err != errSlowPath {
			t.Fatalf("%s: %v", l, err)
		}
	}
	ms, err := splitFlat([]byte(`{"raw":"0x\u0030"}`), nil)
	if err != nil || len(ms) != 1 || string(ms[0].val) != "0x0" {
		t.Fatalf("escaped string: %v %v", ms, err)
	}
}

// TestRawKeyIsTreeKey checks that a raw record lands at its own tree key.
func TestRawKeyIsTreeKey(t *testing.T) {
	o := engineOpts{engine: engineBintrie, groupDepth: 5}
	tdb := memoryTrieDB(&o)
	defer tdb.Close()
	tr, err := openRawTrie(tdb, &o, types.EmptyBinaryHash)
	if err != nil {
		t.Fatal(err)
	}
	k := common.HexToHash("0x0102030405060708091011121314151617181920212223242526272829303132")
	v := common.HexToHash("0xff")
	if err := tr.update([]common.Hash{k}, [][]byte{v[:]}); err != nil {
		t.Fatal(err)
	}
	bt, _ := bintrie.NewBinaryTrie(types.EmptyBinaryHash, tdb, 5)
	var vals [bintrie.StemNodeWidth][]byte
	vals[k[31]] = v[:]
	if err := bt.UpdateStem(k[:31], vals[:]); err != nil {
		t.Fatal(err)
	}
	if tr.hash() != bt.Hash() {
		t.Fatalf("raw %x, stem %x", tr.hash(), bt.Hash())
	}
	got, err := tr.get(k)
	if err != nil || !bytes.Equal(got, v[:]) {
		t.Fatalf("get %x %v", got, err)
	}
}
