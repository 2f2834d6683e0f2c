// Package gpu knows about GPUs and the work that runs on them: the kernel
// taxonomy (which kernel names are collectives, which algorithm and protocol
// an NCCL kernel runs, what a memcpy copies between), the catalog of GPU
// models (dense tensor TFLOP/s per dtype, memory, HBM and link bandwidth,
// looked up from the names traces report), the performance model of
// PyTorch operators (FLOPs and compulsory bytes from their recorded shapes,
// for the roofline; perfmodel.go) and the NVML sampler of hardware
// counters.
//
// The taxonomy functions are pure and allocation-free on their hot paths;
// readers call them once per distinct kernel name, not per event.
package gpu
