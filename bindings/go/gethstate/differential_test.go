package gethstate

import (
	"fmt"
	"math/big"
	"math/rand"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"

	ubt "github.com/ubt/bindings/go"
)

const (
	diffSeed   = 7864
	diffBlocks = 24
)

// scenario generates the deterministic block sequence of the differential
// test. It keeps its own book of which accounts exist, to choose
// meaningful operations; the operations themselves read the state they
// depend on (e.g. the balance to subtract) from the StateDB they run on.
type scenario struct {
	rng       *rand.Rand
	tc        *touched
	eoas      []common.Address // funded, nonce may be 0
	contracts []common.Address // deployed and alive
	dead      []common.Address // destroyed, to be re-created later
	next      uint64           // next fresh address
	longCode  []byte
	// loadCode makes every operation on a contract read its code first,
	// as the EVM does when it executes the contract.
	loadCode bool
	counts   map[string]int // operations generated, by kind
}

func newScenario(seed int64, loadCode bool) *scenario {
	rng := rand.New(rand.NewSource(seed))
	return &scenario{
		rng:      rng,
		tc:       newTouched(),
		next:     0x1000,
		longCode: randomCode(rng, 5000), // 162 chunks: spans two stems
		loadCode: loadCode,
		counts:   map[string]int{},
	}
}

func (sc *scenario) fresh() common.Address {
	sc.next++
	a := common.BigToAddress(new(big.Int).SetUint64(sc.next * 0x9e3779b97f4a7c15))
	sc.tc.addr(a)
	return a
}

func (sc *scenario) pick(list []common.Address) common.Address {
	return list[sc.rng.Intn(len(list))]
}

func (sc *scenario) remove(list []common.Address, a common.Address) []common.Address {
	for i, b := range list {
		if b == a {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

// slot is a storage slot: in the header stem (< 64) or in main storage.
func (sc *scenario) slot() common.Hash {
	switch sc.rng.Intn(3) {
	case 0:
		return common.BigToHash(new(big.Int).SetUint64(uint64(sc.rng.Intn(64))))
	case 1:
		return common.BigToHash(new(big.Int).SetUint64(uint64(64 + sc.rng.Intn(300))))
	default:
		var h common.Hash
		sc.rng.Read(h[:])
		return h
	}
}

func (sc *scenario) value() common.Hash {
	if sc.rng.Intn(4) == 0 {
		sc.counts["zero-write"]++
		return common.Hash{} // a write back to zero: DeleteStorage
	}
	if sc.rng.Intn(2) == 0 {
		return common.BigToHash(new(big.Int).SetUint64(uint64(sc.rng.Intn(1000) + 1)))
	}
	var h common.Hash
	sc.rng.Read(h[:])
	return h
}

func (sc *scenario) touchContract(a common.Address) []op {
	if sc.loadCode {
		return []op{opReadCode(a)}
	}
	return nil
}

// block returns the transactions of block n.
func (sc *scenario) block(n int) []tx {
	var txs []tx
	if n == 1 {
		// Genesis-like funding and the long-code deployments: two
		// contracts with the same 5000-byte code, one small contract.
		var t tx
		for i := 0; i < 8; i++ {
			a := sc.fresh()
			sc.eoas = append(sc.eoas, a)
			t = append(t, opAddBalance(a, 1_000_000+uint64(i)))
		}
		for i := 0; i < 2; i++ {
			c := sc.fresh()
			sc.contracts = append(sc.contracts, c)
			t = append(t, opDeploy(c, sc.longCode), opAddBalance(c, 7))
		}
		c := sc.fresh()
		sc.contracts = append(sc.contracts, c)
		t = append(t, opDeploy(c, randomCode(sc.rng, 100)))
		for i := 0; i < 6; i++ {
			k, v := sc.slot(), sc.value()
			sc.tc.slot(c, k)
			t = append(t, opSetState(c, k, v))
		}
		return append(txs, t)
	}
	ntx := 2 + sc.rng.Intn(4)
	for i := 0; i < ntx; i++ {
		var t tx
		nops := 1 + sc.rng.Intn(5)
		for j := 0; j < nops; j++ {
			t = append(t, sc.randomOp(n)...)
		}
		txs = append(txs, t)
	}
	return txs
}

func (sc *scenario) randomOp(n int) []op {
	switch r := sc.rng.Intn(100); {
	case r < 15: // transfer between EOAs
		sc.counts["transfer"]++
		from, to := sc.pick(sc.eoas), sc.pick(sc.eoas)
		v := uint64(sc.rng.Intn(5000))
		return []op{opSubBalance(from, v), opIncNonce(from), opAddBalance(to, v)}
	case r < 22: // a new funded account
		a := sc.fresh()
		sc.eoas = append(sc.eoas, a)
		return []op{opAddBalance(a, uint64(1+sc.rng.Intn(100000)))}
	case r < 45: // storage writes, often to the same slot again
		sc.counts["storage"]++
		c := sc.pick(sc.contracts)
		ops := sc.touchContract(c)
		k := sc.slot()
		sc.tc.slot(c, k)
		ops = append(ops, opSetState(c, k, sc.value()))
		if sc.rng.Intn(3) == 0 { // rewrite the same slot in the same block
			sc.counts["rewrite"]++
			ops = append(ops, opSetState(c, k, sc.value()))
		}
		return ops
	case r < 52: // value to a contract
		c := sc.pick(sc.contracts)
		return append(sc.touchContract(c), opAddBalance(c, uint64(1+sc.rng.Intn(100))))
	case r < 60: // a deployment, sometimes of the shared long code
		c := sc.fresh()
		code := randomCode(sc.rng, sc.rng.Intn(6000))
		sc.counts["deploy"]++
		if sc.rng.Intn(3) == 0 {
			sc.counts["long-code"]++
			code = sc.longCode
		}
		if len(code) == 0 {
			code = []byte{0x00}
		}
		sc.contracts = append(sc.contracts, c)
		ops := []op{opDeploy(c, code), opAddBalance(c, uint64(sc.rng.Intn(3)))}
		for i := sc.rng.Intn(4); i > 0; i-- {
			k := sc.slot()
			sc.tc.slot(c, k)
			ops = append(ops, opSetState(c, k, sc.value()))
		}
		return ops
	case r < 67: // EIP-6780: created and self-destructed in one transaction
		sc.counts["selfdestruct-new"]++
		c := sc.fresh()
		k := sc.slot()
		sc.tc.slot(c, k)
		return []op{opDeploy(c, randomCode(sc.rng, 300)), opSetState(c, k, common.HexToHash("0x01")),
			opAddBalance(c, 5), opSelfDestruct(c)}
	case r < 72: // EIP-158: an account drained to empty is deleted
		if len(sc.eoas) < 4 {
			return nil
		}
		sc.counts["drain"]++
		a := sc.pick(sc.eoas)
		sc.eoas = sc.remove(sc.eoas, a)
		sc.dead = append(sc.dead, a)
		// Only deleted if its nonce is 0; otherwise it stays, empty-balanced.
		return []op{opDrain(a)}
	case r < 75: // a touched empty account that never existed
		sc.counts["touch-empty"]++
		return []op{opAddBalance(sc.fresh(), 0)}
	case r < 80: // destruction of an existing contract (pre-6780 semantics)
		if len(sc.contracts) < 4 {
			return nil
		}
		sc.counts["destroy"]++
		c := sc.pick(sc.contracts)
		sc.contracts = sc.remove(sc.contracts, c)
		sc.dead = append(sc.dead, c)
		return append(sc.touchContract(c), opSelfDestruct(c))
	case r < 88: // re-creation of a destroyed account
		if len(sc.dead) == 0 {
			return nil
		}
		sc.counts["recreate"]++
		a := sc.pick(sc.dead)
		sc.dead = sc.remove(sc.dead, a)
		if sc.rng.Intn(2) == 0 {
			sc.eoas = append(sc.eoas, a)
			return []op{opAddBalance(a, uint64(1+sc.rng.Intn(1000)))}
		}
		sc.contracts = append(sc.contracts, a)
		ops := []op{opDeploy(a, randomCode(sc.rng, 1+sc.rng.Intn(200)))} // shorter: stale chunks stay
		k := sc.slot()
		sc.tc.slot(a, k)
		return append(ops, opSetState(a, k, sc.value()))
	default: // nonce bump
		return []op{opIncNonce(sc.pick(sc.eoas))}
	}
}

// diffRun is the outcome of runDifferential.
type diffRun struct {
	dir     string
	udb     *ubt.DB
	gethDB  state.Database
	sc      *scenario
	root    common.Hash
	deleted int // accounts seen existing after a block and absent after a later one
	revived int // accounts seen absent again and then existing again
}

var neverTouched = []common.Address{common.HexToAddress("0xffffffffffffffffffffffffffffffffffffffff"), {}, common.HexToAddress("0x01")}

// runDifferential executes the same seeded block sequence through a
// StateDB over ubt and a StateDB over go-ethereum's own binary trie, and
// requires the same root after every block and the same reads at it.
func runDifferential(t *testing.T, loadCode bool) *diffRun {
	dir := t.TempDir()
	udb := openUBT(t, dir)
	ubtDB := NewDatabase(udb)
	gethDB := newGethDatabase()

	sc := newScenario(diffSeed, loadCode)
	run := &diffRun{dir: dir, udb: udb, gethDB: gethDB, sc: sc}
	existed := map[common.Address]bool{}
	gone := map[common.Address]bool{}
	var uRoot, gRoot common.Hash
	for n := 1; n <= diffBlocks; n++ {
		txs := sc.block(n)
		us, err := state.New(uRoot, ubtDB)
		if err != nil {
			t.Fatalf("block %d: state.New over ubt: %v", n, err)
		}
		gs, err := state.New(gRoot, gethDB)
		if err != nil {
			t.Fatalf("block %d: state.New over geth: %v", n, err)
		}
		uRoot = execBlock(t, us, uint64(n), txs)
		gRoot = execBlock(t, gs, uint64(n), txs)
		if uRoot != gRoot {
			t.Fatalf("block %d: roots differ: ubt %s, geth %s", n, uRoot, gRoot)
		}
		committed, err := udb.CommittedRoot()
		if err != nil || common.Hash(committed) != uRoot {
			t.Fatalf("block %d: ubt committed root %s (err %v), want %s", n, common.Hash(committed), err, uRoot)
		}
		compareReads(t, fmt.Sprintf("block %d", n), ubtDB, gethDB, uRoot, gRoot, sc.tc, neverTouched)
		if t.Failed() {
			t.FailNow()
		}
		// Track deletions and re-creations, to check the sequence has them.
		after, err := state.New(gRoot, gethDB)
		if err != nil {
			t.Fatal(err)
		}
		for a := range sc.tc.addrs {
			switch exists := after.Exist(a); {
			case exists && gone[a]:
				run.revived++
				gone[a] = false
			case exists:
				existed[a] = true
			case existed[a] && !gone[a]:
				run.deleted++
				gone[a] = true
			}
		}
	}
	run.root = uRoot
	for _, kind := range []string{"transfer", "storage", "zero-write", "rewrite", "deploy", "long-code",
		"selfdestruct-new", "drain", "touch-empty", "destroy", "recreate"} {
		if sc.counts[kind] == 0 {
			t.Errorf("the sequence has no %q operation", kind)
		}
	}
	if run.deleted == 0 || run.revived == 0 {
		t.Errorf("the sequence deleted %d and re-created %d accounts, want both > 0", run.deleted, run.revived)
	}
	t.Logf("%d blocks, %d addresses, %d deletions, %d re-creations, operations %v, final root %s",
		diffBlocks, len(sc.tc.addrs), run.deleted, run.revived, sc.counts, uRoot)
	return run
}

// TestDifferential runs the sequence with every operation on a contract
// reading its code first, as the EVM does when it executes the contract,
// then reopens the ubt database and compares its persisted state.
func TestDifferential(t *testing.T) {
	run := runDifferential(t, true)
	if run.root == (common.Hash{}) {
		t.Fatal("the sequence left an empty state")
	}

	// Reopen: the persisted state reads the same as geth's.
	if err := run.udb.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	udb := reopenUBT(t, run.dir)
	defer udb.Close()
	if root, err := udb.Root(); err != nil || common.Hash(root) != run.root {
		t.Fatalf("reopened tip %s (err %v), want %s", common.Hash(root), err, run.root)
	}
	compareReads(t, "reopened", NewDatabase(udb), run.gethDB, run.root, run.root, run.sc.tc, neverTouched)
}

// TestDifferentialUnloadedCode runs the sequence with operations on
// contracts that do not read their code (as a withdrawal or a fee credit
// to a contract). go-ethereum then writes code size 0 into BasicData (it
// passes len of the loaded code, nil, to UpdateAccount); ubt writes the
// same, so the roots agree, and the reader recovers the code from its
// chunks, so the reads agree too. The test checks that the sequence did
// leave such an account.
func TestDifferentialUnloadedCode(t *testing.T) {
	run := runDifferential(t, false)
	defer run.udb.Close()
	zeroed := 0
	for a := range run.sc.tc.addrs {
		acc, found, err := run.udb.Account(a)
		if err != nil {
			t.Fatal(err)
		}
		if found && acc.CodeSize == 0 && common.Hash(acc.CodeHash) != types.EmptyCodeHash {
			zeroed++
		}
	}
	if zeroed == 0 {
		t.Fatal("no contract has code size 0 in BasicData: the sequence did not exercise the code recovery")
	}
	t.Logf("%d contracts with code size 0 in BasicData, code recovered from the chunks", zeroed)
}
