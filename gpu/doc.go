// Package gpu knows about GPUs and the work that runs on them: the kernel
// taxonomy (which kernel names are collectives, which algorithm and protocol
// an NCCL kernel runs, what a memcpy copies between) and, in later issues,
// the GPU catalog and the NVML sampler.
//
// The taxonomy functions are pure and allocation-free on their hot paths;
// readers call them once per distinct kernel name, not per event.
package gpu
