//go:build !unix

package duck

import "os"

// No advisory locks here: a store's lock is a plain file, and no folder is
// ever taken for an orphan.
func lockFile(*os.File) error { return nil }

func unheld(*os.File) bool { return false }
