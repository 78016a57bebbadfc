package main

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/holiman/uint256"
)

// decodeFixed decodes "0x" followed by exactly 2*len(dst) hex digits.
func decodeFixed(dst []byte, s []byte) error {
	if len(s) != 2+2*len(dst) || s[0] != '0' || s[1] != 'x' {
		return fmt.Errorf("%q is not 0x followed by %d hex digits", clip(s), 2*len(dst))
	}
	if _, err := hex.Decode(dst, s[2:]); err != nil {
		return fmt.Errorf("%q is not hex", clip(s))
	}
	return nil
}

// decodeBytes decodes "0x" followed by an even number of hex digits.
func decodeBytes(s []byte) ([]byte, error) {
	if len(s) < 2 || s[0] != '0' || s[1] != 'x' || len(s)%2 != 0 {
		return nil, fmt.Errorf("%q is not 0x followed by an even number of hex digits", clip(s))
	}
	out := make([]byte, (len(s)-2)/2)
	if _, err := hex.Decode(out, s[2:]); err != nil {
		return nil, fmt.Errorf("%q is not hex", clip(s))
	}
	return out, nil
}

func decodeAddress(s []byte) (common.Address, error) {
	var a common.Address
	return a, decodeFixed(a[:], s)
}

func decodeHash(s []byte) (common.Hash, error) {
	var h common.Hash
	return h, decodeFixed(h[:], s)
}

// decodeBalance parses a decimal balance (at most 2^256-1).
func decodeBalance(s []byte) (*uint256.Int, error) {
	if len(s) == 0 {
		return nil, fmt.Errorf("empty balance")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return nil, fmt.Errorf("balance %q is not a decimal number", clip(s))
		}
	}
	v, err := uint256.FromDecimal(string(s))
	if err != nil {
		return nil, fmt.Errorf("balance %q: %v", clip(s), err)
	}
	return v, nil
}

func decodeUint(s []byte, what string) (uint64, error) {
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a 64-bit unsigned integer", what, clip(s))
	}
	return v, nil
}

// clip shortens a value quoted in an error message.
func clip(s []byte) string {
	if len(s) > 80 {
		return string(s[:77]) + "..."
	}
	return string(s)
}
