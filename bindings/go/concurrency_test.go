package ubt_test

import (
	"fmt"
	"sync"
	"testing"

	ubt "github.com/ubt/bindings/go"
)

// Goroutines read snapshots while the writer applies, persists and
// reverts: each reader sees exactly its block's state throughout (block
// b wrote value b at keys 1..b·10), or ErrSnapshotReverted once its root
// is reverted away, and nothing else. Blocks 26..30 are reverted after
// block 30 is applied, so blocks 31..40 do not see their keys 251..300.
func TestReadersWhileTheWriterApplies(t *testing.T) {
	db, _ := open(t, nil)
	const blocks = 40
	type snapshot struct {
		block  uint64
		reader *ubt.Reader
	}
	snapshots := make(chan snapshot, blocks)
	errs := make(chan error, 8*blocks)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range snapshots {
				errs <- checkSnapshot(s.block, s.reader)
			}
		}()
	}
	var roots []ubt.Root
	for b := uint64(1); b <= blocks; b++ {
		writes := make([]ubt.Write, 0, 10)
		for i := (b - 1) * 10; i < b*10; i++ {
			writes = append(writes, ubt.Write{Key: key(i + 1), Value: word(b)})
		}
		root, err := db.Apply(writes)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
		r, err := db.Reader(root)
		if err != nil {
			t.Fatal(err)
		}
		snapshots <- snapshot{block: b, reader: r}
		if b%5 == 0 {
			if err := db.Persist(root); err != nil {
				t.Fatal(err)
			}
		}
		if b == 30 {
			// Undo blocks 26..30: their readers may fail from here on.
			if err := db.Revert(roots[24]); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(snapshots)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// checkSnapshot reads the keys of blocks 1..block twice and closes the
// reader.
func checkSnapshot(block uint64, r *ubt.Reader) error {
	defer r.Close()
	for pass := 0; pass < 2; pass++ {
		keys := make([][32]byte, 0, block*10+10)
		for i := uint64(1); i <= block*10+10; i++ {
			keys = append(keys, key(i))
		}
		values, found, err := r.GetMany(keys)
		if err != nil {
			if block > 25 && block <= 30 && isCode(err, ubt.ErrSnapshotReverted) {
				return nil
			}
			return fmt.Errorf("block %d: %w", block, err)
		}
		for i := range keys {
			n := uint64(i) + 1
			if n > block*10 || (block > 30 && n > 250 && n <= 300) {
				if found[i] {
					return fmt.Errorf("block %d sees key %d of a later block", block, n)
				}
				continue
			}
			if want := word((n-1)/10 + 1); !found[i] || values[i] != want {
				return fmt.Errorf("block %d: key %d = %x (found %v), want %x", block, n, values[i], found[i], want)
			}
		}
	}
	return nil
}
