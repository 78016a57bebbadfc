package ubt

import "encoding/hex"

// Root is a state root: the hash of the whole tree (32 zero bytes for the
// empty tree).
type Root [32]byte

// String is the root in hex with a 0x prefix.
func (r Root) String() string {
	return "0x" + hex.EncodeToString(r[:])
}

// Write is one tree-key write of a block: Value at Key. Its layout is the
// C ABI's UbtWrite, so a slice of writes is passed to the library without
// copying.
type Write struct {
	// Key is the 32-byte tree key (stem and sub-index).
	Key [32]byte
	// Value is the 32-byte value stored at Key.
	Value [32]byte
}
