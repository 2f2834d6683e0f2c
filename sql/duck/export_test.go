package duck

// AllocatorRetained exposes allocatorRetained to the package's tests.
var AllocatorRetained = allocatorRetained
