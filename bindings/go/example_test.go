package ubt_test

import (
	"fmt"
	"log"
	"os"

	ubt "github.com/ubt/bindings/go"
)

// Open a database, apply a block of account-level writes, make it
// durable, read it back through a snapshot and prove a value.
func Example() {
	dir, err := os.MkdirTemp("", "ubt-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := ubt.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	alice := [20]byte{0xa1}
	var balance [32]byte
	balance[31] = 100
	var slot, value [32]byte
	slot[31] = 1
	value[31] = 42
	root, err := db.ApplyAccounts([]ubt.AccountOp{
		ubt.SetAccount(alice, ubt.Account{Nonce: 1, Balance: balance}),
		ubt.SetStorage(alice, slot, value),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Persist(root); err != nil {
		log.Fatal(err)
	}

	snapshot, err := db.Reader(root)
	if err != nil {
		log.Fatal(err)
	}
	defer snapshot.Close()
	account, found, err := snapshot.Account(alice)
	if err != nil {
		log.Fatal(err)
	}
	stored, _, err := snapshot.Storage(alice, slot)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found, account.Nonce, account.Balance[31], stored[31])
	// Output: true 1 100 42
}
