package main

import (
	"errors"
	"fmt"
)

// inputError marks a failure caused by the caller: bad flags, a malformed
// workload, a database made for another engine. It exits with status 2;
// every other error (I/O, database failures) exits with status 1.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// badInput formats an inputError.
func badInput(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps an error to the process exit status.
func exitCode(err error) int {
	var ie *inputError
	if errors.As(err, &ie) {
		return 2
	}
	return 1
}
