//go:build unix

package duck

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f without waiting: an error if
// another open file holds one, in this process or another. The lock goes
// with the file's close, or its process's end.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// unheld says whether nobody holds a lock on f (taking it).
func unheld(f *os.File) bool { return lockFile(f) == nil }
