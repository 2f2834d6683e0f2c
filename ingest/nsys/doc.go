// Package nsys reads Nsight Systems SQLite exports (nsys export --type
// sqlite report.nsys-rep) into the neutral trace model (ingest/trace) the
// Kineto reader fills too, so that ingest.TraceBatches and every detector
// work on nsys data unchanged. Steps, launches, self times and the
// step-time account are derived by trace.Derive, as for Kineto traces. It uses the pure-Go modernc.org/sqlite driver
// (read-only, immutable: the export may sit on a read-only mount).
//
// # Traces and ranks
//
// ReadFile returns one trace per GPU: per (process, CUDA device) pair with
// kernel, memcpy or memset rows. A report of one process on two GPUs, or
// of two processes on one GPU each, gives two traces. Ranks are, in order:
// Options.RankOf when it names one; for an export with a single GPU, the
// RANK (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID) nsys recorded in the
// environment of the command it launched (META_DATA_CAPTURE), else a rank
// in the file name (rank3.sqlite, as trace.RankFromName reads it), else 0
// with RankSource "default" so that the loader may renumber it; for
// several GPUs, Options.FirstRank plus the GPU's position in (globalPid,
// deviceId) order. The ranks of an NCCL communicator (its NVTX payloads)
// are not read.
//
// Host rows follow their process: a runtime call goes to the trace of the
// device that ran what it launched (matched by correlation id), any other
// call and every NVTX range to the process's lowest device. Host rows of
// processes that ran nothing on a GPU (a launcher) are left out and
// counted in Counts["host_rows_without_gpu"].
//
// # Times
//
// nsys stores times as ns since the capture started;
// TARGET_INFO_SESSION_START_TIME.utcEpochNs is that instant, which becomes
// BaseTimeNS and is added to every time so that rows are ns since the Unix
// epoch like Kineto's. An export without it (older nsys) keeps times
// relative to the session start with HasBaseTime false: such ranks cannot
// be lined up with traces from other files.
//
// # Mapping (table.column -> slices column)
//
//	CUPTI_ACTIVITY_KIND_KERNEL -> kind kernel, or comm when the name is an
//	  NCCL/RCCL kernel (gpu.IsCollectiveKernel); cat "kernel";
//	  name = StringIds[demangledName] (else shortName); coll_name, coll_algo,
//	  coll_proto = gpu.ParseCollectiveKernel(StringIds[shortName]);
//	  start, end-start -> ts, dur; deviceId -> device and pid; streamId ->
//	  stream and tid (as Kineto's GPU rows); correlationId -> correlation;
//	  gridX..Z, blockX..Z -> grid_*, block_*; registersPerThread ->
//	  registers; staticSharedMemory + dynamicSharedMemory -> shared_mem
//	CUPTI_ACTIVITY_KIND_MEMCPY -> kind memcpy, cat "gpu_memcpy"; bytes;
//	  name "Memcpy HtoD (Pinned -> Device)" built from copyKind
//	  (ENUM_CUDA_MEMCPY_OPER: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ...; the
//	  unified-memory kinds as their direction) and srcKind/dstKind
//	  (ENUM_CUDA_MEM_KIND: 0 Pageable, 1 Pinned, 2 Device, ...), then
//	  copy_kind and host_mem (pinned, pageable) read back with gpu.ParseCopy
//	  exactly as for Kineto's names
//	CUPTI_ACTIVITY_KIND_MEMSET -> kind memset, cat "gpu_memset", name
//	  "Memset (Device)" (memKind), bytes
//	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION -> kind sync, cat "cuda_sync", name
//	  Kineto's "Stream Sync", "Event Sync", "Stream Wait Event", "Context
//	  Sync" from syncType; its deviceId is always 0 (CUPTI's record has
//	  none), so the device comes from the contextId the GPU rows use
//	CUPTI_ACTIVITY_KIND_RUNTIME -> kind runtime, or driver for eventClass 1
//	  (cu* names without the column); cat "cuda_runtime" / "cuda_driver";
//	  name = StringIds[nameId] without nsys's "_v7000" version suffix
//	  (cudaLaunchKernel, cudaStreamSynchronize: the names sync_api and
//	  launch_overhead look for); globalTid -> pid, tid; correlationId
//	NVTX_EVENTS (push/pop 59, start/end 60 and their NVTXT twins 70, 71)
//	  -> kind annotation, cat "nvtx" or "nvtx:<domain>", name = text or
//	  StringIds[textId]. Operator ranges of emit_nvtx (nsys
//	  --pytorch=autograd-nvtx: "aten::mm, seq = 3, op_id = 7, sizes = ...")
//	  become cpu_op named "aten::mm". NCCL ranges (ncclAllReduce, or
//	  AllReduce in the NCCL domain) carry coll_name. Ranges without an end
//	  are counted in Counts["nvtx_unterminated"]; marks are left out.
//	NVTX step ranges -> steps: "ProfilerStep#N"; else (case-insensitive)
//	  "step N", "step_N", "step#N", "iteration N", "iter:N", "train_step N",
//	  "training step N/M". A step spans the union of its ranges on every
//	  thread of the process and holds for all its devices. Host rows take
//	  the step containing their start; GPU rows take the step of the call
//	  that launched them and its start as launch_ts, as the Kineto reader
//	  does.
//	TARGET_INFO_GPU (name, totalMemory, smCount, computeMajor/Minor) ->
//	  Devices, matched to the CUDA device through TARGET_INFO_CUDA_DEVICE
//	  (pid, cudaId -> gpuId), else TARGET_INFO_GPU.cuDevice
//	GPU_METRICS + TARGET_INFO_GPU_METRICS -> counters: metric = metricName
//	  as nsys names it ("SMs Active [Throughput %]"), device = the trace's
//	  CUDA device; the GPU is typeId & 0xFF; samples before the session
//	  start are dropped
//	PROCESSES, ThreadNames -> ProcessNames, ThreadNames
//
// self_dur is computed for host rows as the Kineto reader does. A trace is
// Complete (an export is written from a finished report); JSONBytes is the
// file's size split across its traces.
//
// # Left out
//
// OS runtime calls (OSRT_API: pthread and syscall waits are not CUDA
// synchronization, and the event model has no kind for them), CUDA graph,
// unified-memory and memory-usage tables, CPU sampling and scheduling,
// profiler overhead (CUPTI_ACTIVITY_KIND_OVERHEAD, PROFILER_OVERHEAD),
// NVTX marks and payloads (NCCL message sizes and ranks), GPU projections of
// NVTX ranges (nsys computes them in its GUI, they are not in the export:
// no gpu_annotation rows), kernel occupancy, external ids (nsys has none),
// and the cuDNN/cuBLAS API tables.
//
// # Errors
//
// A file that is not SQLite, an SQLite database that is not an nsys export
// with CUDA or NVTX trace, an export without GPU activity, a truncated
// file (shorter than its header says) and a corrupt one give a *FileError
// naming the file and what was expected; the reader never panics on them.
package nsys
