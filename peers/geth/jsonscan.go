package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// member is one "name": value pair of a flat JSON object. For a string value
// val holds its contents (without quotes); for a number, its digits.
type member struct {
	name, val []byte
	isString  bool
}

// errSlowPath tells the caller that the line uses JSON the fast scanner does
// not handle (escapes, nested values, ...) and must go through encoding/json.
var errSlowPath = errors.New("needs the full JSON decoder")

// scanFlat splits a one-line JSON object whose values are strings without
// escapes or non-negative integers into members, appending to out. It is the
// fast path for state.jsonl, where every line has this shape; anything else
// returns errSlowPath.
func scanFlat(line []byte, out []member) ([]member, error) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return out, errSlowPath
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return out, trailing(line, i+1)
	}
	for {
		name, j, err := scanString(line, i)
		if err != nil {
			return out, err
		}
		i = skipSpace(line, j)
		if i >= len(line) || line[i] != ':' {
			return out, errSlowPath
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return out, errSlowPath
		}
		var m member
		m.name = name
		switch c := line[i]; {
		case c == '"':
			m.val, i, err = scanString(line, i)
			if err != nil {
				return out, err
			}
			m.isString = true
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			m.val, i = line[i:j], j
		default:
			return out, errSlowPath
		}
		out = append(out, m)
		i = skipSpace(line, i)
		if i >= len(line) {
			return out, errSlowPath
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return out, trailing(line, i+1)
		default:
			return out, errSlowPath
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errSlowPath
	}
	return nil
}

// scanString reads a string without escapes starting at the quote at b[i].
func scanString(b []byte, i int) ([]byte, int, error) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, errSlowPath
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return b[i+1 : j], j + 1, nil
		case '\\':
			return nil, i, errSlowPath
		}
	}
	return nil, i, errSlowPath
}

// decodeFlat is the slow path: any valid JSON object whose members are
// strings or non-negative integers. Its errors describe what is wrong.
func decodeFlat(line []byte, out []member) ([]member, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return out, fmt.Errorf("not a JSON object: %v", err)
	}
	for name, raw := range obj {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			out = append(out, member{name: []byte(name), val: []byte(s), isString: true})
			continue
		}
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			if _, err := strconv.ParseUint(n.String(), 10, 64); err != nil {
				return out, fmt.Errorf("%q: %s is not a non-negative integer", name, n)
			}
			out = append(out, member{name: []byte(name), val: []byte(n.String())})
			continue
		}
		return out, fmt.Errorf("%q: expected a string or a number", name)
	}
	return out, nil
}

// splitFlat tries the fast scanner first and falls back to encoding/json.
func splitFlat(line []byte, out []member) ([]member, error) {
	res, err := scanFlat(line, out[:0])
	if err == nil {
		return res, nil
	}
	return decodeFlat(line, out[:0])
}
