#!/usr/bin/env python3
"""Labelled single-GPU scenarios, traced with torch.profiler on a real GPU.

Each scenario trains (or runs) a model on the first CUDA device with one
known cause of lost time injected, and writes what PyTorch's own profiler
records, as a user's job would:

  OUT/<scenario>/rank-0.pt.trace.json.gz   the Kineto trace (export_chrome_trace)
  OUT/memory/rank-0.memory_snapshot.json.gz torch.cuda.memory._snapshot() as JSON
  OUT/ncu/rank-0.ncu.csv                    ncu --csv stdout, log lines and all
  OUT/labels.json                           what was injected where, and torch's
                                            own memory totals

Then `go run -tags duckdb_arrow ./bench/gpucheck OUT` analyses each one and
checks that the report's verdict names the injected cause.

Needs only torch (and ncu on PATH for the ncu capture). Usage:

  python3 bench/gpu/scenarios.py --out bench/gpu/run [--only healthy,sync]

The scenarios, and the cause each must be blamed for:

  healthy       a 166M-parameter transformer, bf16 autocast, fused AdamW  none injected
  stall_once    150 ms of host work before step 5 only (a checkpoint save) stall
  slow_input    ~60 ms of Python in the DataLoader before every step        input
  sync          .item() of an activation norm after every layer, acted on  sync
  pageable_h2d  a 512 MB pageable host tensor copied to the GPU each step  copies
  fp32          the same model in FP32 with TF32 off (no autocast)         precision
  launch_bound  a tiny MLP: thousands of microsecond kernels a step        launch
  small_batch   the healthy transformer fed 2 sequences of 128 tokens      launch
  weak_stall    12 ms of host work before one step only (weak)            stall
  logged        healthy, plus loss.item() and a log line every step       none (distractor)
  workers       slow_input's 60 ms batches made by 6 DataLoader workers    none (distractor)
  memory        a snapshot with the allocator's history; torch's totals     (memory)
  ncu           three GEMMs profiled by ncu, stdout captured                (ncu)
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

WAIT, WARMUP, ACTIVE = 1, 2, 6  # profiler schedule: ACTIVE steps recorded
STEPS = WAIT + WARMUP + ACTIVE + 1  # one more step flushes the trace
DEV = "cuda"


# ---------------------------------------------------------------- models

class GPT(nn.Module):
    """A small decoder-style transformer: 8 layers of width 1024, a 32k
    vocabulary (about 166M parameters)."""

    def __init__(self, vocab=32000, d=1024, layers=8, heads=16, seq=1024):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
            for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.probe = None  # called with each layer's output (the sync scenario)

    def forward(self, tokens):
        h = self.emb(tokens) + self.pos[:, : tokens.shape[1]]
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
        for layer in self.layers:
            h = layer(h, src_mask=mask, is_causal=True)
            if self.probe is not None:
                self.probe(h)
        return self.head(self.norm(h))


class TinyMLP(nn.Module):
    """Launch-bound on purpose: 24 narrow layers on a batch of 16."""

    def __init__(self, d=256, layers=24):
        super().__init__()
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d)) for _ in range(layers)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        return self.out(self.body(x))


# ---------------------------------------------------------------- helpers

def busy(ms):
    """Host work that holds the Python thread for ms milliseconds (what a
    tokenizer, an augmentation or a checkpoint writer does)."""
    end = time.perf_counter() + ms / 1000
    acc = 0
    while time.perf_counter() < end:
        acc += sum(range(2000))
    return acc


def save_checkpoint_metadata(ms=150):
    """The one-off stall: a synchronous write before one step."""
    return busy(ms)


class SlowDataset(torch.utils.data.Dataset):
    """Token batches whose preparation costs ms of Python per batch."""

    def __init__(self, n, seq, vocab, ms, batch):
        self.n, self.seq, self.vocab, self.ms, self.batch = n, seq, vocab, ms, batch

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        busy(self.ms / self.batch)  # tokenisation, per sample
        return torch.randint(0, self.vocab, (self.seq,))


# MODE is how a scenario's steps are recorded: "full" (torch.profiler with
# shapes and Python stacks, as most users run it), "lean" (the profiler
# without them, so the host pays less for it) or "none" (no profiler: the
# steps are only timed, which is the job's own speed that the profiled
# traces are measured against).
MODE = "full"
TIMINGS = {}  # scenario -> host time of each profiled step (ms), MODE "none"


class StepTimer:
    """MODE "none": the profiler's place in a scenario's loop. It times the
    steps the profiler would record (WAIT+WARMUP onwards) on the host, the
    last one after the GPU has finished."""

    def __init__(self, name):
        self.name, self.marks = name, []

    def __enter__(self):
        self.marks.append(time.perf_counter())
        return self

    def step(self):
        if len(self.marks) == WAIT + WARMUP + ACTIVE:
            torch.cuda.synchronize()  # the last recorded step ends when its work does
        self.marks.append(time.perf_counter())

    def __exit__(self, *exc):
        m = self.marks[WAIT + WARMUP: WAIT + WARMUP + ACTIVE + 1]
        TIMINGS[self.name] = [round((b - a) * 1000, 3) for a, b in zip(m, m[1:])]
        return False


def profiler(path):
    if MODE == "none":
        return StepTimer(os.path.basename(os.path.dirname(path)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(path),
        record_shapes=MODE == "full",
        with_stack=MODE == "full",
    )


def trace_path(out, name):
    return os.path.join(out, name, "rank-0.pt.trace.json.gz")


def gpt_setup(fp32=False):
    torch.backends.cuda.matmul.allow_tf32 = not fp32
    torch.backends.cudnn.allow_tf32 = not fp32
    model = GPT().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    return model, opt


def train_step(model, opt, tokens, autocast=True):
    with torch.autocast(DEV, dtype=torch.bfloat16, enabled=autocast):
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tokens[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


# ---------------------------------------------------------------- scenarios

def gpt_scenario(out, name, batch=8, seq=1024, before_step=None, fp32=False, probe=None, h2d_mb=0):
    model, opt = gpt_setup(fp32=fp32)
    model.probe = probe
    pageable = torch.empty(h2d_mb << 18, dtype=torch.float32) if h2d_mb else None  # pageable host memory
    with profiler(trace_path(out, name)) as prof:
        for step in range(STEPS):
            if before_step is not None:
                before_step(step)
            tokens = torch.randint(0, 32000, (batch, seq + 1), device=DEV)
            if pageable is not None:
                features = pageable.to(DEV)  # a synchronous copy from pageable memory
                tokens = tokens + (features[:1].long() * 0)
            train_step(model, opt, tokens, autocast=not fp32)
            prof.step()
    torch.cuda.synchronize()


def healthy(out):
    gpt_scenario(out, "healthy")
    return {"cause": "none", "what": "a 166M-parameter transformer, bf16 autocast, fused AdamW; nothing injected"}


def stall_scenario(out, name, ms, what):
    # the profiled steps are WAIT+WARMUP .. STEPS-2; stall before the third of them
    stall_at = WAIT + WARMUP + 2
    gpt_scenario(out, name, before_step=lambda s: save_checkpoint_metadata(ms) if s == stall_at else None)
    return {"cause": "stall", "step_index": stall_at - WAIT - WARMUP, "ms": ms, "what": what}


def stall_once(out):
    return stall_scenario(out, "stall_once", 150, "150 ms of host work (save_checkpoint_metadata) before one step")


def input_scenario(out, name, workers=0):
    """The healthy transformer fed by SlowDataset's ~60 ms of Python per
    batch: in the training process (workers=0), or in worker processes."""
    model, opt = gpt_setup()
    batch, seq = 8, 1024
    extra = dict(num_workers=workers, pin_memory=True, prefetch_factor=4) if workers else {}
    loader = torch.utils.data.DataLoader(SlowDataset(STEPS * batch, seq + 1, 32000, 60, batch), batch_size=batch, **extra)
    it = iter(loader)
    if workers:
        time.sleep(1.0)  # the workers start and fill their queues, as they would over a long run
    with profiler(trace_path(out, name)) as prof:
        for tokens in it:
            train_step(model, opt, tokens.to(DEV, non_blocking=True))
            prof.step()
    torch.cuda.synchronize()


def slow_input(out):
    input_scenario(out, "slow_input")
    return {"cause": "input", "ms": 60, "what": "~60 ms of Python per batch in a single-process DataLoader"}


def log_activation(stats, h):
    """Per-layer activation monitoring: the norm read back to the host
    (.item() waits for the GPU to drain), then ~0.5 ms of Python that acts
    on the value (NaN check, formatting, a metrics call) while the drained
    GPU has nothing queued."""
    v = h.float().norm().item()
    busy(0.5)
    stats.append(v)


def sync(out):
    stats = []
    gpt_scenario(out, "sync", probe=lambda h: log_activation(stats, h))
    return {"cause": "sync", "what": ".item() of each layer's activation norm, then 0.5 ms of Python on it (8 host syncs a step)"}


def pageable_h2d(out):
    gpt_scenario(out, "pageable_h2d", h2d_mb=512)
    return {"cause": "copies", "mb": 512, "what": "a 512 MB pageable host tensor copied to the GPU every step"}


def fp32(out):
    gpt_scenario(out, "fp32", fp32=True)
    return {"cause": "precision", "what": "the model in FP32, no autocast, TF32 off for matmuls and cuDNN"}


def launch_bound(out):
    torch.backends.cuda.matmul.allow_tf32 = True
    model = TinyMLP().to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(16, 256, device=DEV)
    with profiler(trace_path(out, "launch_bound")) as prof:
        for _ in range(STEPS):
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            prof.step()
    torch.cuda.synchronize()
    return {"cause": "launch", "what": "a tiny MLP (24 layers of 256) and a per-parameter Adam: thousands of us-long kernels a step"}


def small_batch(out):
    # the common single-GPU fine-tune: a model too small for its batch, so
    # eager PyTorch's per-op host cost, not the GPU, sets the step time
    gpt_scenario(out, "small_batch", batch=2, seq=128)
    return {"cause": "launch", "what": "the healthy transformer on 2 sequences of 128 tokens: host-bound eager PyTorch"}


def weak_stall(out):
    return stall_scenario(out, "weak_stall", 12, "12 ms of host work (save_checkpoint_metadata) before one step: a weak fault")


def logged(out):
    # what nearly every training loop does: read the loss back each step and
    # log it; one sync at the end of a step costs little and must not be blamed
    model, opt = gpt_setup()
    lines = []
    with profiler(trace_path(out, "logged")) as prof:
        for step in range(STEPS):
            tokens = torch.randint(0, 32000, (8, 1025), device=DEV)
            loss = train_step(model, opt, tokens)
            lines.append(f"step {step} loss {loss.item():.4f}")
            prof.step()
    torch.cuda.synchronize()
    return {"cause": "none", "what": "healthy, plus loss.item() and a log line after every step (a distractor for sync)"}


def workers(out):
    # slow_input's 60 ms of Python per batch, made by 6 worker processes and
    # pinned: the loader keeps ahead of the GPU, so the input is not the limit
    input_scenario(out, "workers", workers=6)
    return {"cause": "none", "ms": 60, "what": "slow_input's 60 ms batches made by 6 pinned DataLoader workers (a distractor for input)"}


def memory(out):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=200000)
    model, opt = gpt_setup()
    for _ in range(3):
        train_step(model, opt, torch.randint(0, 32000, (8, 1025), device=DEV))
    # fragment the cache a little, as variable-length batches do
    keep = [torch.empty(int(n * 1.7) << 20, dtype=torch.uint8, device=DEV) for n in range(1, 40)]
    del keep[::2]
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    path = os.path.join(out, "memory", "rank-0.memory_snapshot.json.gz")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(snap, f)
    return {"cause": "memory", "what": "an allocator snapshot after 3 training steps and a fragmenting pattern",
            "reserved_bytes": torch.cuda.memory_reserved(), "allocated_bytes": torch.cuda.memory_allocated(),
            "max_allocated_bytes": torch.cuda.max_memory_allocated(),
            "segments": len(snap["segments"])}


def ncu_child():
    """What ncu profiles: bf16 GEMMs of 8192^3."""
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    print("ncu child: 3 GEMMs of 8192^3 done")


def ncu(out):
    exe = shutil.which("ncu")
    if exe is None:
        return None
    path = os.path.join(out, "ncu", "rank-0.ncu.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cmd = [exe, "--csv", "--page", "details", "--section", "SpeedOfLight", "--section", "Occupancy",
           "--section", "LaunchStats", "--section", "MemoryWorkloadAnalysis",
           "--kernel-name-base", "demangled", "-k", "regex:gemm|nvjet|xmma|cutlass", "-c", "3",
           sys.executable, os.path.abspath(__file__), "--ncu-child"]
    with open(path, "w") as f:  # stdout as a user's `> k.csv` captures it
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=300).returncode
    return {"cause": "ncu", "what": "ncu --csv --page details of 3 bf16 GEMMs, stdout captured with its log lines",
            "file": os.path.relpath(path, out), "rc": rc, "kernels": 3}


SCENARIOS = {f.__name__: f for f in (healthy, stall_once, slow_input, sync, pageable_h2d, fp32, launch_bound,
                                      small_batch, weak_stall, logged, workers, memory, ncu)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="bench/gpu/run", help="folder to write the scenarios and labels.json to")
    ap.add_argument("--only", default="", help="comma-separated scenario names (default: all)")
    ap.add_argument("--mode", default="full", choices=["full", "lean", "none"],
                    help="full: torch.profiler with shapes and stacks; lean: without them; "
                         "none: no profiler, the steps timed into OUT/timings.json")
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global MODE
    MODE = args.mode
    if args.ncu_child:
        ncu_child()
        return
    if not torch.cuda.is_available():
        sys.exit("scenarios.py: no CUDA device: these scenarios need an NVIDIA GPU")
    names = [n for n in args.only.split(",") if n] or list(SCENARIOS)
    for n in names:
        if n not in SCENARIOS:
            sys.exit(f"scenarios.py: unknown scenario {n!r} (known: {', '.join(SCENARIOS)})")
    os.makedirs(args.out, exist_ok=True)
    labels = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "profiled_steps": ACTIVE, "mode": MODE, "scenarios": []}
    if MODE != "full":
        names = [n for n in names if n not in ("memory", "ncu")]  # they have no profiled steps
    for n in names:
        t0 = time.time()
        torch.manual_seed(0)
        label = SCENARIOS[n](args.out)
        if label is None:
            print(f"{n}: skipped (ncu is not on PATH)", flush=True)
            continue
        label["name"] = n
        label["dir"] = n
        labels["scenarios"].append(label)
        torch.cuda.empty_cache()
        print(f"{n}: {time.time() - t0:.1f} s", flush=True)
        with open(os.path.join(args.out, "labels.json"), "w") as f:  # after each: a run cut short keeps what it made
            json.dump(labels, f, indent=1)
        if MODE == "none":
            with open(os.path.join(args.out, "timings.json"), "w") as f:
                json.dump(TIMINGS, f, indent=1)
    print(f"wrote {args.out}/labels.json; score it with: go run -tags duckdb_arrow ./bench/gpucheck {args.out}")


if __name__ == "__main__":
    main()
