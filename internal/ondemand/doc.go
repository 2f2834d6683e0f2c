// Package ondemand captures a trace from a running PyTorch job without
// touching its code: it is the Go side of the protocol Meta's Dynolog
// daemon speaks with libkineto (PyTorch's profiler library), so the
// trainscope agent can stand where dynolog stands. A training process
// started with KINETO_USE_DAEMON=1 (any value) registers with the daemon
// on the host and polls it for an on-demand profiler config; Trigger
// queues one for each process of a run, and the processes write their
// traces where the config says.
//
// # The protocol, as read from the sources
//
// Transport (dynolog ipcfabric/Endpoint.h, FabricManager.h, Utils.h):
//   - Unix datagram sockets (SOCK_DGRAM), connectionless, non-blocking.
//     The daemon binds the abstract name "dynolog"; each libkineto
//     process binds its own, "dynoconfigclient" + a random UUIDv4
//     (IpcFabricConfigClient.cpp). An abstract address is sun_path[0]=0,
//     the name, and a trailing NUL that the address length counts, so the
//     socket is "\x00dynolog\x00" (Go: "@dynolog\x00"; "@dynolog" alone
//     is another socket). With KINETO_IPC_SOCKET_DIR set, both sides use
//     socket files DIR/<name> instead (dynolog chmods its file 0666).
//   - A reply goes to the sender's name as the receiver reads it: up to
//     the first NUL, NUL-terminated again.
//   - Each datagram: Metadata {size_t size; char type[32]} (40 bytes on
//     64-bit Linux, host byte order: little-endian on x86-64 and aarch64),
//     then size payload bytes. dynolog peeks the header and then reads
//     the payload; it compares only the type's first bytes ("req" would
//     match "request"); this side wants the exact name and an exact size.
//   - "ctxt" (registration, LibkinetoContext: int32 gpu, int32 pid, int64
//     jobid = 16 bytes). The daemon answers "ctxt" with an int32: how many
//     processes of that job it has on that GPU (dynolog
//     LibkinetoConfigManager::registerLibkinetoContext), -1 on error.
//     libkineto's registerInstance sends it; current libkineto no longer
//     calls it, so the poll is what registers a process in practice.
//   - "req" (config poll, LibkinetoRequest: int32 type, int32 n, int64
//     jobid, int32 pids[n] = 16+4n bytes). type is a bit mask: EVENTS=1,
//     ACTIVITIES=2 (libkineto asks for activities only while its profiler
//     is idle). pids are the process and up to 10 ancestors, the process
//     first (ThreadUtil pidCommandPairsOfAncestors, kMaxParentPids=10),
//     as it sees them. jobid is SLURM_JOB_ID or 0. The daemon answers
//     "req" with the config text, empty when nothing is pending; dynolog
//     answers nothing when n is 0. dynolog keys a process by its pid set,
//     hands a pending config once and clears it, and forgets a process
//     not heard from for 60 s (kKeepAliveTimeSecs).
//   - libkineto waits for a reply 9 tries 10 ms apart (5 in older
//     releases) and polls every ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS
//     (default 5 s; ConfigLoader::updateConfigThread), so a trigger takes
//     effect within about 5 s, at a different moment on each rank.
//
// Config text (libkineto Config.cpp, AbstractConfig.cpp; what `dyno
// gputrace` sends, dynolog cli/src/commands/gputrace.rs): KEY=VALUE
// lines, '#' starts a comment, each line must split on '=' into exactly
// two trimmed parts (else the whole config is dropped), booleans are
// true/false (also y/n, t/f, 1/0). Keys used here:
//   - ACTIVITIES_LOG_FILE: the trace file; libkineto inserts _<pid> (its
//     own getpid()) before the first ".pt.trace.json", else before the
//     first ".json". Since libkineto's 2026-06 change (#1426) an on-demand
//     log file must lie under /tmp/ or KINETO_ONDEMAND_TRACE_DIR and hold
//     no ".."; otherwise libkineto writes /tmp/libkineto_activities_<pid>.json.
//   - Iterations: PROFILE_START_ITERATION=0, PROFILE_START_ITERATION_ROUNDUP=R
//     (start on the next iteration that is a multiple of R: the same
//     iteration on every rank), ACTIVITIES_ITERATIONS=N. Iterations are
//     optimizer steps: with KINETO_USE_DAEMON set (non-empty),
//     torch.profiler registers an optimizer step post-hook that counts
//     them (KinetoStepTracker; pytorch/pytorch torch/profiler/__init__.py),
//     so a job that never calls torch.optim's step is captured by duration
//     only. Not yet checked against a real job here (no GPU host lent).
//   - Duration: ACTIVITIES_DURATION_MSECS, and PROFILE_START_TIME (Unix
//     ms) for a synchronized start; without it libkineto starts after its
//     warm-up (ACTIVITIES_WARMUP_PERIOD_SECS, 5 s).
//   - PROFILE_REPORT_INPUT_SHAPES, PROFILE_PROFILE_MEMORY,
//     PROFILE_WITH_STACK, PROFILE_WITH_FLOPS, PROFILE_WITH_MODULES;
//     ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB bounds the activity buffer
//     (default 128); REQUEST_TRACE_ID names the trace (older libkineto
//     warns that it does not know the key and goes on).
//
// Sources read (through the code search's stored copies and mirrors,
// dynolog at c3a231a of 2026-08-21, kineto at 114171d of 2026-08-20):
// facebookincubator/dynolog dynolog/src/ipcfabric/{FabricManager.h,
// Endpoint.h, Utils.h}, dynolog/src/tracing/IPCMonitor.cpp,
// dynolog/src/LibkinetoConfigManager.cpp, dynolog/src/Main.cpp,
// cli/src/main.rs, cli/src/commands/gputrace.rs; pytorch/pytorch
// torch/profiler/__init__.py (the optimizer hook); pytorch/kineto
// libkineto/src/{IpcFabricConfigClient.cpp, IpcFabricConfigClient.h,
// DaemonConfigLoader.cpp, ConfigLoader.cpp, Config.cpp,
// AbstractConfig.cpp, ThreadUtil.cpp, init.cpp}, libkineto/include/Config.h.
// No code of theirs is copied here; the layouts are restated from them.
//
// # What this package adds
//
// Safety: the socket asks the kernel for each sender's credentials
// (SO_PASSCRED); a process is served only if the sender's uid and the
// owner of the pid it names (Inspector, /proc/PID/status) are the
// daemon's own uid or in Config.AllowUIDs. Captures are bounded (Limits:
// steps, duration, step alignment, start delay, GPU buffer, the trace
// size a watcher should accept), a run has one capture in flight at a
// time (a second Trigger fails with ErrBusy until Finish or the capture's
// deadline), and each capture is one log line: who asked, the pids and
// ranks, the steps or duration, the folder. Datagrams are checked
// strictly (Decode, DecodeContext, DecodePoll; FuzzDatagram) and a bad
// one is dropped and counted.
//
// Ranks: on-demand traces carry no distributedInfo, so the daemon reads
// RANK, LOCAL_RANK and WORLD_SIZE from /proc/PID/environ (and
// TRAINSCOPE_RUN, TORCHELASTIC_RUN_ID, SLURM_JOB_ID,
// KINETO_ONDEMAND_TRACE_DIR) when a process registers, and names each
// trace <dir>/rank<R>_<host>_<capture id>.pt.trace.json (libkineto adds
// _<pid>). Target carries the rank with the expected paths.
//
// A process's run: TRAINSCOPE_RUN in its environment, else
// Config.DefaultRun (the agent's --run), else its scheduler job
// (TORCHELASTIC_RUN_ID unless "none", SLURM_JOB_ID), else libkineto's job id.
//
// Triggers travel as TriggerMessage JSON on TriggerSubject
// (trainscope-trigger.<cluster>.<run token>, core NATS request-reply,
// outside the JetStream stream's trainscope.> subjects); each agent of
// the run answers a TriggerReply. Limiter rate-limits automatic
// triggers. The clock is injected everywhere (Config.Now, Limiter.Now).
//
// # Wiring (internal/ondemand/odwire, as sketched here)
//
// Agent: New(Config{Host, DefaultRun: --run, AllowUIDs, Limits, Logf,
// OnEvent}); Listen (fails if dynolog runs: one daemon per host); go
// Serve(ctx). Subscribe to TriggerSubject(cluster, run) (or
// TriggerSubjectAll with --runs-in); per message DecodeTrigger, skip a
// run it does not serve, reply with Answer(m, dir) encoded as JSON (dir:
// a folder of the agent's own, agent.on_demand.dir, not the watched one,
// whose watcher would publish the traces again without their rank).
// Watch each Target's Paths (odwire polls them): Target.Find
// says where the trace landed (also inside a container's root); the
// watcher publishes it (capped at Capture.MaxTraceBytes) under the run
// and host with Target.Rank as the rank hint (the reader finds no
// distributedInfo), then Finish(run, id) once every target's trace is
// published or given up. Processes and Captures are for a status page.
// The folder must be under /tmp/ or named in the job's
// KINETO_ONDEMAND_TRACE_DIR, else traces land in
// /tmp/libkineto_activities_<pid>.json (Target.Paths lists it first).
//
// CLI: `trainscope trigger --run ID [--steps N] [--wait M]` builds
// NewTrigger, EncodeTrigger, and sends a NATS request on TriggerSubject,
// gathering TriggerReply answers until a timeout. Serve: an HTTP POST
// endpoint taking the same JSON and publishing it likewise. Automatic: a
// counter detector (SM clock, utilisation, power or step-rate drop)
// asks Limiter.Allow(run) and, if allowed, publishes a TriggerMessage
// with Reason set to the detector's name.
//
// Processes in containers: the pid libkineto names its file with is its
// own namespace's (Target.PID); Target.HostPID is the kernel's, through
// which /proc/<HostPID>/root reaches a container's /tmp. Abstract
// sockets are per network namespace: a pod without the host's network
// reaches the agent only through KINETO_IPC_SOCKET_DIR (Config.SocketDir)
// on a shared volume.
package ondemand
