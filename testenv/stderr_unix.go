package main

import (
	"os"
	"syscall"
)

// redirectStderr points file descriptor 2 at f, so that everything the
// embedded servers log goes there.
func redirectStderr(f *os.File) error {
	if err := syscall.Dup3(int(f.Fd()), 2, 0); err != nil {
		return err
	}
	os.Stderr = f
	return nil
}
