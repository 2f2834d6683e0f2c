// Package gpusim writes single-GPU PyTorch profiler traces of the
// scenarios bench/gpu/scenarios.py runs on a real GPU (a healthy bf16
// transformer step; a one-off host stall; a slow input pipeline; host
// syncs acted on; a pageable host-to-device copy every step; FP32 matmuls
// with TF32 off; a launch-bound tiny model), so that the scorer
// (bench/gpucheck) and the accuracy harness can be exercised where no GPU
// is lent. The traces have the shape torch.profiler writes: a host thread
// of ProfilerStep#N annotations, ATen operators with their input shapes
// and types, cudaLaunchKernel / cudaMemcpyAsync calls linked by
// correlation to kernels and copies on stream 7, Python frames, and
// deviceProperties. Timing follows a simple model: each operator costs
// host time, a kernel starts when both its launch and the stream's earlier
// work are done, the launch queue holds at most 1,024 kernels, and a
// synchronising call returns when the stream drains.
//
// A simulated trace is not a real one: it proves the plumbing and the
// scoring, and gives the verdict a fixed target; only traces from a real
// GPU (bench/gpu) show whether the verdict is right on real jobs.
package gpusim
