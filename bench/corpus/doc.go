// Package corpus finds the real inputs tests read: the copies in the
// repository's testdata/corpus (a self-contained clone needs nothing else),
// and, for the few large files left out of the repository, a full copy of
// the corpus named by TRAINSCOPE_CORPUS or found at ../shared/corpus beside
// the repository. A file stored gzipped (name.gz for a name that is not
// itself .gz) is unpacked once into a cache under the system's temp folder.
// A test whose file is nowhere is skipped with one logged line that names
// it, and when TRAINSCOPE_CORPUS_LOG names a file every lookup is appended
// to it, so that `make test` can say how many corpus checks ran.
package corpus
