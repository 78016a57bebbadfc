package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/params"
)

// edgeCase is a small input that exercises one decoding or state-application
// rule an importer has to follow. text is compact JSON built by hand, so
// that it keeps the spelling under test (number formats, prefixes, short
// hex); it is indented before it is written, which changes no token.
type edgeCase struct {
	name      string
	allocOnly bool // a bare alloc map, not a whole genesis object
	accounts  int  // accounts the decoder must produce
	text      string
}

// detBytes is n deterministic bytes: sha256(label || uint64_be(i)) for
// i = 0, 1, ... concatenated.
func detBytes(label string, n int) []byte {
	out := make([]byte, 0, n+32)
	var ctr [8]byte
	for i := uint64(0); len(out) < n; i++ {
		binary.BigEndian.PutUint64(ctr[:], i)
		h := sha256.Sum256(append([]byte(label), ctr[:]...))
		out = append(out, h[:]...)
	}
	return out[:n]
}

// addrHex is a deterministic address as 40 lowercase hex digits, no prefix.
func addrHex(label string) string { return hex.EncodeToString(detBytes("addr:"+label, 20)) }

func hx(b []byte) string { return "0x" + hex.EncodeToString(b) }

func q(s string) string { return strconv.Quote(s) }

// obj builds a JSON object from key, raw-value pairs in the given order.
func obj(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(q(kv[i]))
		b.WriteByte(':')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

// slot is a storage key as 0x and 64 hex digits.
func slot(n uint64) string { return common.BigToHash(new(big.Int).SetUint64(n)).Hex() }

// word is a deterministic 32-byte value as 0x and 64 hex digits.
func word(label string) string { return hx(detBytes(label, 32)) }

// genesisWith wraps an alloc object in the two other fields core.Genesis
// requires (gasLimit, difficulty).
func genesisWith(alloc string) string {
	return obj("gasLimit", q("0x1c9c380"), "difficulty", q("0x0"), "alloc", alloc)
}

func pow2(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }

func edgeCases() []edgeCase {
	return []edgeCase{
		{name: "edge-empty-alloc.json", accounts: 0, text: genesisWith("{}")},
		storageOnly(),
		zeroStorage(),
		emptyAccounts(),
		codeSizes(),
		bigBalances(),
		negativeBalances(),
		numberFormats(),
		addresses(),
		storageFormats(),
		allocOnly(),
		manySlots(),
		fullGenesis(),
	}
}

// storageOnly: accounts with storage but no code, nonce or balance. The
// decoder requires "balance" (here zero); geth still writes the account
// header (basic data and the empty code hash) because SetCode creates the
// account.
func storageOnly() edgeCase {
	a := obj("balance", q("0x0"), "storage", obj(
		slot(0), q(word("so-0")),
		slot(1), q("0x2a"),
		slot(63), q(word("so-63")),
		slot(64), q(word("so-64")),
		word("so-hashed-key"), q(word("so-hashed-val")),
	))
	b := obj("balance", q("0"), "storage", obj(word("so-b-key"), q("0x01")))
	c := obj("balance", q("0x0"), "storage", obj(
		common.BigToHash(pow2(64)).Hex(), q("0x0100"),
		common.BigToHash(pow2(248)).Hex(), q("0x02"),
		common.MaxHash.Hex(), q("0x03"),
	))
	return edgeCase{name: "edge-storage-only.json", accounts: 3, text: genesisWith(obj(
		"0x"+addrHex("so-a"), a, "0x"+addrHex("so-b"), b, "0x"+addrHex("so-c"), c))}
}

// zeroStorage: storage entries whose value is zero. On a fresh account
// SetState with zero equals the committed value and is dropped, so a zero
// entry writes nothing (not even a zero leaf); an account with only zero
// entries is an empty account.
func zeroStorage() edgeCase {
	a := obj("balance", q("0x64"), "storage", obj(
		slot(1), q("0x00"),
		slot(2), q("0x0000000000000000000000000000000000000000000000000000000000000000"),
		slot(3), q("0x05"),
		slot(100), q("0x"),
		word("zs-hashed-1"), q("0x00"),
		word("zs-hashed-2"), q(word("zs-val-2")),
	))
	b := obj("balance", q("0x0"), "storage", obj(slot(1), q("0x00"), word("zs-hashed-3"), q("")))
	c := obj("balance", q("0x0"), "nonce", q("0x7"), "code", q("0x6001600055"), "storage", obj(
		slot(0), q("0x00"), slot(70), q("0x0000"), slot(71), q("0x01")))
	return edgeCase{name: "edge-zero-storage.json", accounts: 3, text: genesisWith(obj(
		"0x"+addrHex("zs-a"), a, "0x"+addrHex("zs-b"), b, "0x"+addrHex("zs-c"), c))}
}

// emptyAccounts: zero balance, zero nonce, no code, written four ways.
// Commit runs with empty fork rules (no EIP-158), so each one is kept: two
// leaves, basic data all zero and the empty code hash.
func emptyAccounts() edgeCase {
	return edgeCase{name: "edge-empty-account.json", accounts: 4, text: genesisWith(obj(
		"0x"+addrHex("ea-a"), obj("balance", q("0x0")),
		"0x"+addrHex("ea-b"), obj("balance", q("0"), "nonce", q("0x0"), "code", q("0x"), "storage", "{}"),
		"0x"+addrHex("ea-c"), obj("balance", "0", "nonce", "0", "code", q("")),
		"0x"+addrHex("ea-d"), obj("balance", q(""), "nonce", q("")),
	))}
}

// codeSizes: code lengths around the 31-byte chunk size and the 128 chunks
// that fit in the account's header stem; longer code continues on the next
// stems (chunk 128 is at tree index 1). Some code ends inside push data.
func codeSizes() edgeCase {
	type code struct {
		label string
		code  []byte
	}
	push32Straddle := append(append(make([]byte, 0, 64), bytesOf(0x5b, 30)...), 0x7f) // PUSH32 at offset 30
	push32Straddle = append(append(push32Straddle, detBytes("cs-push32", 32)...), 0x00)
	endsInPush := append(append(bytesOf(0x00, 20), 0x7f), detBytes("cs-trunc", 5)...) // PUSH32 with 5 of 32 bytes
	codes := []code{
		{"stop-1", []byte{0x00}},
		{"push1-1", []byte{0x60}}, // the only byte is a PUSH1 whose data is missing
		{"rand-31", detBytes("cs-31", 31)},
		{"rand-32", detBytes("cs-32", 32)},
		{"rand-62", detBytes("cs-62", 62)},
		{"rand-63", detBytes("cs-63", 63)},
		{"rand-3968", detBytes("cs-3968", 128*31)}, // 128 chunks: the header stem exactly
		{"rand-3969", detBytes("cs-3969", 128*31+1)},
		{"rand-5000", detBytes("cs-5000", 5000)},
		{"rand-11904", detBytes("cs-11904", 384*31)}, // fills the second stem exactly
		{"rand-24576", detBytes("cs-24576", 24576)},
		{"push32-straddle", push32Straddle},
		{"ends-in-push32", endsInPush},
		{"all-push32-100", bytesOf(0x7f, 100)},
	}
	var kv []string
	for i, c := range codes {
		acct := obj("balance", q(fmt.Sprint(i+1)), "nonce", q("0x1"), "code", q(hx(c.code)))
		if c.label == "rand-3968" {
			acct = obj("balance", q("0x0"), "code", q(hx(c.code)), "storage", obj(slot(0), q("0x01"), slot(63), q("0x02")))
		}
		kv = append(kv, "0x"+addrHex("cs-"+c.label), acct)
	}
	return edgeCase{name: "edge-code-sizes.json", accounts: len(codes), text: genesisWith(obj(kv...))}
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// bigBalances: balances of 16 bytes and more. go-ethereum's binary trie
// keeps at most 16 balance bytes: for a balance of L > 16 significant bytes
// it keeps the last L-16 of them (balanceBytes[16:]), so 2^128 becomes 0
// and only a 32-byte balance keeps its low 16 bytes.
func bigBalances() edgeCase {
	max256 := new(big.Int).Sub(pow2(256), big.NewInt(1))
	bal := []string{
		q(hx(new(big.Int).Sub(pow2(128), big.NewInt(1)).Bytes())), // 16 bytes, kept whole
		q(hx(pow2(128).Bytes())),                                  // 17 bytes -> 0x00
		q(new(big.Int).Add(pow2(128), big.NewInt(0x1234)).String()),
		q(hx(bytesOf(0xff, 17))),                                   // 17 bytes -> 0xff
		q("0x0102030405060708090a0b0c0d0e0f101112131415"),          // 21 bytes -> 0x1112131415
		q(hx(new(big.Int).Sub(pow2(160), big.NewInt(1)).Bytes())),  // 20 bytes
		q(hx(pow2(255).Bytes())),                                   // 32 bytes -> 0
		q(max256.String()),                                         // decimal string, 32 bytes
		max256.String(),                                            // JSON number
		q(hx(new(big.Int).Add(pow2(200), big.NewInt(77)).Bytes())), // 26 bytes
	}
	var kv []string
	for i, b := range bal {
		kv = append(kv, "0x"+addrHex(fmt.Sprintf("bb-%d", i)), obj("balance", b, "nonce", q(fmt.Sprint(i))))
	}
	return edgeCase{name: "edge-big-balance.json", accounts: len(bal), text: genesisWith(obj(kv...))}
}

// negativeBalances: the balance decoder (math.HexOrDecimal256) accepts a
// negative decimal, and uint256.MustFromBig turns -x into 2^256-x without
// complaint, so "-1" is the balance 2^256-1, which the binary trie then
// truncates like any 32-byte balance (to its last 16 bytes).
func negativeBalances() edgeCase {
	bal := []string{
		q("-1"),
		"-1000",
		q("-" + pow2(128).String()),
		q("-123456789012345678901234567890"),
	}
	var kv []string
	for i, b := range bal {
		kv = append(kv, "0x"+addrHex(fmt.Sprintf("nb-%d", i)), obj("balance", b))
	}
	return edgeCase{name: "edge-negative-balance.json", accounts: len(bal), text: genesisWith(obj(kv...))}
}

// numberFormats: balance (math.HexOrDecimal256) and nonce
// (math.HexOrDecimal64) as decimal strings, 0x/0X hex strings (any case, odd
// length, leading zeros) and bare JSON numbers, including numbers beyond
// 2^64.
func numberFormats() edgeCase {
	pairs := [][2]string{
		{q("1000000000000000000"), q("5")},
		{q("0xde0b6b3a7640000"), q("0x5")},
		{"1000000000000000000", "5"},
		{q("0XDE0B6B3A7640000"), q("0X5")},
		{q("0x00de0b6b3a7640000"), q("0x0005")},
		{q("000123"), q("007")},
		{"0", "18446744073709551615"},
		{q("0x0"), q("0xffffffffffffffff")},
		{"123456789012345678901234567890", q("18446744073709551615")},
		{q("0xAbCdEf"), q("0XfF")},
	}
	var kv []string
	for i, p := range pairs {
		kv = append(kv, "0x"+addrHex(fmt.Sprintf("nf-%d", i)), obj("balance", p[0], "nonce", p[1]))
	}
	return edgeCase{name: "edge-number-formats.json", accounts: len(pairs), text: genesisWith(obj(kv...))}
}

// addresses: alloc keys with and without 0x (or 0X), lower, upper and
// checksummed mixed case (common.UnprefixedAddress accepts all of them).
func addresses() edgeCase {
	mixed := common.HexToAddress(addrHex("ad-mixed")).Hex() // EIP-55 checksum case
	keys := []string{
		"0x" + addrHex("ad-lower"),
		addrHex("ad-bare"),
		mixed,
		strings.ToUpper(addrHex("ad-upper")),
		"0X" + addrHex("ad-0X"),
		"0x0000000000000000000000000000000000000000",
		"0000000000000000000000000000000000000001",
	}
	var kv []string
	for i, k := range keys {
		kv = append(kv, k, obj("balance", q(fmt.Sprint(1000+i)), "nonce", fmt.Sprint(i), "storage", obj(slot(uint64(i)), q("0x01"))))
	}
	return edgeCase{name: "edge-addresses.json", accounts: len(keys), text: genesisWith(obj(kv...))}
}

// storageFormats: storage keys and values (types' storageJSON) shorter than
// 32 bytes, left-padded; with or without a lowercase 0x; upper-case digits;
// "0x" and "" as the key mean slot 0. (Odd-length hex and a 0X prefix are
// rejected by geth's decoder, so they do not appear.)
func storageFormats() edgeCase {
	a := obj("balance", q("0x1"), "storage", obj(
		"0x01", q("0x2a"),
		"02", q("2b"),
		"0x0003", q("0x002c"),
		slot(4), q(word("sf-4")),
		strings.TrimPrefix(slot(5), "0x"), q(strings.TrimPrefix(word("sf-5"), "0x")),
		"0xABCDEF", q("0xFF"),
		"0x", q("0x07"),
		"0x0100", q("0x"+strings.Repeat("00", 31)+"09"),
	))
	b := obj("balance", q("0x1"), "storage", obj(
		word("sf-h1"), q("0x01"),
		word("sf-h2"), q("ff"),
		strings.TrimPrefix(word("sf-h3"), "0x"), q("0x0100"),
		strings.ToUpper(strings.TrimPrefix(word("sf-h4"), "0x")), q("0x"+strings.ToUpper(hex.EncodeToString(detBytes("sf-v4", 31)))),
	))
	c := obj("balance", q("0x1"), "storage", obj("", q("0x01"), "0x40", q("0x0040")))
	return edgeCase{name: "edge-storage-formats.json", accounts: 3, text: genesisWith(obj(
		"0x"+addrHex("sf-a"), a, "0x"+addrHex("sf-b"), b, "0x"+addrHex("sf-c"), c))}
}

// allocOnly: a bare alloc map (types.GenesisAlloc), as evm t8n reads it.
func allocOnly() edgeCase {
	return edgeCase{name: "edge-alloc-only.json", allocOnly: true, accounts: 4, text: obj(
		"0x"+addrHex("ao-eoa"), obj("balance", q("0xde0b6b3a7640000"), "nonce", q("0x3")),
		addrHex("ao-contract"), obj("balance", q("0x0"), "nonce", q("0x1"),
			"code", q(hx(detBytes("ao-code", 300))),
			"storage", obj(slot(0), q("0x01"), slot(1), q(word("ao-1")), word("ao-k"), q("0x0a"))),
		"0x"+addrHex("ao-big"), obj("balance", q(hx(bytesOf(0xee, 32)))),
		"0x"+addrHex("ao-empty"), obj("balance", q("0x0")),
	)}
}

// manySlots: two contracts with hundreds of slots: every header slot
// (0..63), consecutive main-storage slots over several stems (64..699) and
// 200 hashed keys; the second also has code, whose chunks share the header
// stem with slots 0..63.
func manySlots() edgeCase {
	storage := func(label string, step int) string {
		var kv []string
		for i := 0; i < 700; i += step {
			v := hx(detBytes(fmt.Sprintf("%s-v%d", label, i), 1+i%32))
			if v == "0x00" {
				v = "0x01"
			}
			kv = append(kv, slot(uint64(i)), q(v))
		}
		for i := range 200 / step {
			kv = append(kv, word(fmt.Sprintf("%s-k%d", label, i)), q(word(fmt.Sprintf("%s-hv%d", label, i))))
		}
		return obj(kv...)
	}
	return edgeCase{name: "edge-many-slots.json", accounts: 2, text: genesisWith(obj(
		"0x"+addrHex("ms-a"), obj("balance", q("0x1"), "nonce", q("0x1"), "storage", storage("ms-a", 1)),
		"0x"+addrHex("ms-b"), obj("balance", q("0x2"), "nonce", q("0x1"), "code", q(hx(detBytes("ms-code", 4000))),
			"storage", storage("ms-b", 2)),
	))}
}

// fullGenesis: a devnet-style genesis with every header field, a chain
// config that enables the binary trie at genesis, the system contracts and
// a few funded accounts. An importer reads only "alloc".
func fullGenesis() edgeCase {
	config := obj(
		"chainId", "7864", "homesteadBlock", "0", "eip150Block", "0", "eip155Block", "0",
		"eip158Block", "0", "byzantiumBlock", "0", "constantinopleBlock", "0", "petersburgBlock", "0",
		"istanbulBlock", "0", "berlinBlock", "0", "londonBlock", "0",
		"terminalTotalDifficulty", "0", "enableUBTAtGenesis", "true",
	)
	sys := func(code []byte) string { return obj("balance", q("0x0"), "nonce", q("0x1"), "code", q(hx(code))) }
	alloc := obj(
		params.BeaconRootsAddress.Hex(), sys(params.BeaconRootsCode),
		params.HistoryStorageAddress.Hex(), sys(params.HistoryStorageCode),
		params.WithdrawalQueueAddress.Hex(), sys(params.WithdrawalQueueCode),
		params.ConsolidationQueueAddress.Hex(), sys(params.ConsolidationQueueCode),
		"0x"+addrHex("fg-deposit"), obj("balance", q("0x0"), "code", q(hx(detBytes("fg-deposit-code", 6000))),
			"storage", obj(slot(0x22), q(word("fg-zh-0")), slot(0x23), q(word("fg-zh-1")), slot(0x24), q(word("fg-zh-2")))),
		"0x"+addrHex("fg-faucet"), obj("balance", q("0xc097ce7bc90715b34b9f1000000000")),
		"0x"+addrHex("fg-dev"), obj("balance", q("1000000000000000000000000"), "nonce", q("0x0")),
	)
	return edgeCase{name: "edge-full.json", accounts: 7, text: obj(
		"config", config,
		"nonce", q("0x0"),
		"timestamp", q("0x6650a1b0"),
		"extraData", q(hx([]byte("ubt edge-case genesis"))),
		"gasLimit", q("0x2255100"),
		"difficulty", q("0x0"),
		"mixHash", q(common.Hash{}.Hex()),
		"coinbase", q(common.Address{}.Hex()),
		"alloc", alloc,
		"number", q("0x0"),
		"gasUsed", q("0x0"),
		"parentHash", q(common.Hash{}.Hex()),
		"baseFeePerGas", q("0x3b9aca00"),
	)}
}
