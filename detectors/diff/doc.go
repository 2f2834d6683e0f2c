// Package diff compares two runs loaded in one store: it cuts each into
// iterations (a marker that repeats once per training iteration, found in
// the trace), compares their kernels and host operators per iteration and
// rank, and judges which run is slower, by how much and what moved. The
// verdict and rows render as markdown (WriteMarkdown) or JSON.
package diff
