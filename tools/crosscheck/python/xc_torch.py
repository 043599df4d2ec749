#!/usr/bin/env python3
"""The PyTorch side of snsim-crosscheck: what a framework adds on the host, and copies timed through PyTorch.

Writes snsim-trace/1 files (validation/traces/README.md), one per method, like the C++ program (tools/crosscheck/):

  launch family, method host_clock (time.perf_counter_ns around Python calls; the GPU idle or far behind):
    torch_<op>/dispatch       per call of an eager op in a loop of 1,000 (one sample per loop): add_ (in place, one
                              element), add (out of place: the caching allocator too), mm64 (64x64 float32 matmul),
                              sum (a reduction to a scalar), empty (16 floats, no kernel), view (no kernel, no memory)
    torch_add_/graph_replay_call  the host call torch.cuda.CUDAGraph.replay() of a 100-node graph
    torch_synchronize/idle    torch.cuda.synchronize() with nothing queued
  launch family, method torch_events: torch_add_/back_to_back (1,000 eager add_ between two torch.cuda.Events, per op:
    the device waits for the host when dispatch is the slower); method torch_graph: torch_add_/graph_back_to_back
    (a CUDA graph of 100 add_ replayed between events, per op)
  copy family, tests ce_local (dst.copy_(src), uint8, device to device) and ce_h2d_pinned (non_blocking copy from
    pinned memory), 4 B - 1 GiB: method torch_events variant single (events around one copy) and pipelined
    (`depth` copies), method torch_graph (a graph of 1 or `depth` copies replayed between events)
  compute family, test gemm, formats bf16, fp16 and tf32 (float32 with allow_tf32), normal random operands: a
    transformer layer's linear layers as F.linear(x, W) (cuBLAS TN: m = out features, n = tokens, k = in features),
    square and skinny matmuls as x @ W (cuBLAS NN, m and n swapped from PyTorch's), and bf16 shapes with one odd
    dimension at a time; method torch_events_b2b (calls back to back between two events, per call) and
    torch_events_single (events around one call on an idle GPU); the SM clock and power read through NVML just
    before and after each record (sm_clock_mhz is their mean)
  --distributed (two GPUs, one process each, NCCL through torch.distributed): collective/all_reduce/out_of_place,
    float32 sum, 8 B - 64 MiB, method torch_eager (dist.all_reduce called from Python `depth` times between events,
    per op: the host's dispatch included) and torch_graph (the same calls captured into a graph and replayed)
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch

TOOL = "snsim-crosscheck-torch 0.1.0"


def quantile(sorted_values, q):
    if not sorted_values:
        return 0.0
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Traces:
    """One snsim-trace/1 file per method, each record flushed as it is written."""

    def __init__(self, directory, prefix, header, cap=2000):
        self.directory, self.prefix, self.header, self.cap = directory, prefix, header, cap
        self.files = {}
        self.counts = {}
        self.ids = set()

    def _file(self, method):
        if method not in self.files:
            path = os.path.join(self.directory, f"{self.prefix}-{method}.jsonl")
            f = open(path, "w")
            f.write(json.dumps(dict(self.header, method=method)) + "\n")
            f.flush()
            self.files[method] = f
            self.counts[method] = 0
        return self.files[method]

    def write(self, method, family, test, variant, ranks, nbytes, samples, unit="s", id_suffix=None, **extras):
        if not samples:
            print(f"xc_torch: {family}/{test}/{variant} ({method}): no samples", file=sys.stderr)
            return
        f = self._file(method)
        s = sorted(samples)
        rid = f"{family}/{test}/{variant}/{'-'.join(map(str, ranks))}/{nbytes}/{id_suffix or method}"
        while rid in self.ids:
            rid += "~2"
        self.ids.add(rid)
        stride = max(1, -(-len(samples) // self.cap))
        kept = [float(f"{v:.7g}") for v in samples[::stride]]
        kept = [min(max(v, s[0]), s[-1]) for v in kept]
        record = {
            "id": rid, "family": family, "test": test, "variant": variant, "ranks": ranks, "bytes": nbytes,
            "reps": len(samples), "unit": unit, "median": quantile(s, 0.5), "p01": quantile(s, 0.01),
            "p99": quantile(s, 0.99), "min": s[0], "max": s[-1], "samples": kept, "method": method,
        }
        if stride > 1:
            record["samples_stride"] = stride
        record.update(extras)
        f.write(json.dumps(record) + "\n")
        f.flush()
        self.counts[method] += 1

    def close(self):
        for method, f in self.files.items():
            f.write(json.dumps({"complete": True, "records": self.counts[method]}) + "\n")
            f.close()


def header():
    gpus = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        pci = getattr(p, "pci_bus_id", None)
        pci = f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0" if pci is not None else ""
        gpus.append({"index": i, "name": p.name, "pci": pci, "sms": p.multi_processor_count,
                     "memory_bytes": p.total_memory, "compute_capability": f"{p.major}.{p.minor}"})
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("NCCL_", "NVSHMEM_", "CUDA_", "TORCH_SYMM_MEM_", "PYTORCH_")) and "/" not in v
           and not k.endswith("_VERSION")}
    # Absolute paths (the script's, a temporary output folder) say where it ran: last part only.
    argv = [os.path.basename(a.rstrip("/")) if a.startswith("/") else a for a in sys.argv]
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None
    return {"schema": "snsim-trace/1", "probe": None, "host": socket.gethostname(), "gpus": gpus,
            "driver": os.environ.get("XC_DRIVER_VERSION"), "cuda": torch.version.cuda, "nccl": nccl,
            "nvshmem": None, "topo": os.environ.get("XC_TOPO"), "env": env,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tool": TOOL,
            "torch": torch.__version__, "argv": argv}


def events_time(fn, n=1):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e-3 / n


def graph_of(fn, n):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()  # warm-up on a side stream, as torch.cuda.graphs asks
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def dispatch_costs(out, quick, deadline):
    dev = 0
    x1 = torch.zeros(1, device="cuda")
    a64 = torch.randn(64, 64, device="cuda")
    b64 = torch.randn(64, 64, device="cuda")
    v = torch.zeros(1024, device="cuda")
    ops = {
        "add_": lambda: x1.add_(1.0),
        "add": lambda: x1 + 1.0,
        "mm64": lambda: torch.mm(a64, b64),
        "sum": lambda: v.sum(),
        "empty": lambda: torch.empty(16, device="cuda"),
        "view": lambda: v.view(32, 32),
    }
    loops = 5 if quick else 40
    for name, fn in ops.items():
        if time.time() > deadline:
            break
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        samples = []
        for _ in range(loops):
            t0 = time.perf_counter_ns()
            for _ in range(1000):
                fn()
            samples.append((time.perf_counter_ns() - t0) * 1e-9 / 1000)
            torch.cuda.synchronize()
        out.write("host_clock", "launch", f"torch_{name}", "dispatch", [dev], 0, samples, calls_per_sample=1000)

    add = ops["add_"]
    out.write("torch_events", "launch", "torch_add_", "back_to_back", [dev], 0,
              [events_time(add, 1000) for _ in range(loops)], kernels_per_sample=1000)
    g = graph_of(add, 100)
    out.write("torch_graph", "launch", "torch_add_", "graph_back_to_back", [dev], 0,
              [events_time(g.replay) / 100 for _ in range(loops * 5)], kernels_per_sample=100)
    calls = []
    for _ in range(loops * 5):
        t0 = time.perf_counter_ns()
        g.replay()
        calls.append((time.perf_counter_ns() - t0) * 1e-9)
        torch.cuda.synchronize()
    out.write("host_clock", "launch", "torch_add_", "graph_replay_call", [dev], 0, calls, nodes=100)
    idle = []
    for _ in range(1000 if not quick else 50):
        t0 = time.perf_counter_ns()
        torch.cuda.synchronize()
        idle.append((time.perf_counter_ns() - t0) * 1e-9)
    out.write("host_clock", "launch", "torch_synchronize", "idle", [dev], 0, idle)


def copies(out, quick, deadline, max_bytes):
    dev = 0
    src = torch.empty(max_bytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    pinned = torch.empty(max_bytes, dtype=torch.uint8, pin_memory=True)
    pinned.copy_(src)
    sizes = []
    b = 4
    while b <= max_bytes:
        sizes.append(b)
        b *= 64 if quick else 16
    for test in ("ce_local", "ce_h2d_pinned"):
        source = src if test == "ce_local" else pinned
        for nbytes in sizes:
            if time.time() > deadline:
                return
            s_view, d_view = source[:nbytes], dst[:nbytes]
            d_view.fill_(0xEE)
            fn = lambda: d_view.copy_(s_view, non_blocking=True)  # noqa: E731
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            op_s = time.perf_counter() - t0
            depth = int(min(64, max(4, min(64 * 2**20 // nbytes, 0.02 / max(op_s, 1e-7)))))
            n = 5 if quick else int(min(200, max(3, 0.03 / (op_s + 30e-6))))
            nb = 5 if quick else int(min(50, max(3, 0.03 / (depth * op_s + 30e-6))))
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            out.write("torch_events", "copy", test, "single", [dev], nbytes, [events_time(fn) for _ in range(n)],
                      engine="ce")
            out.write("torch_events", "copy", test, "pipelined", [dev], nbytes,
                      [events_time(fn, depth) for _ in range(nb)], engine="ce", depth=depth)
            for shape, k, reps in (("single", 1, n), ("pipelined", depth, nb)):
                g = graph_of(fn, k)
                samples = [events_time(g.replay) / k for _ in range(reps)]
                extras = {"engine": "ce"}
                if k > 1:
                    extras["depth"] = k
                out.write("torch_graph", "copy", test, shape, [dev], nbytes, samples, **extras)
                del g
            if not torch.equal(d_view, src[:nbytes]):
                raise RuntimeError(f"copy {test} of {nbytes} B: wrong data")


def distributed_worker(rank, world, directory, prefix, quick, budget):
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    out = Traces(directory, prefix, header()) if rank == 0 else None
    deadline = time.time() + budget
    x = torch.ones(16 * 2**20, device="cuda")
    nbytes = 8
    ranks = list(range(world))
    while nbytes <= 64 * 2**20:
        go = torch.tensor([1 if time.time() < deadline else 0], device="cuda")
        dist.broadcast(go, 0)
        if not int(go.item()):
            break
        t = x[: nbytes // 4]
        fn = lambda: dist.all_reduce(t)  # noqa: E731
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        depth = 50 if nbytes <= 2**20 else 10
        eager, graphed = [], []
        for _ in range(3 if quick else 10):
            dist.barrier()
            torch.cuda.synchronize()
            eager.append(events_time(fn, depth))
        g = graph_of(fn, depth)
        for _ in range(3 if quick else 10):
            dist.barrier()
            torch.cuda.synchronize()
            graphed.append(events_time(g.replay) / depth)
        del g
        if out:
            for method, samples in (("torch_eager", eager), ("torch_graph", graphed)):
                algbw = nbytes / statistics.median(samples)
                out.write(method, "collective", "all_reduce", "out_of_place", ranks, nbytes, samples,
                          dtype="float32", count=nbytes // 4, algbw=algbw,
                          busbw=algbw * 2 * (world - 1) / world, ops_per_sample=depth)
        nbytes *= 64 if quick else 4
    if out:
        out.close()
    dist.destroy_process_group()


def gpu_state():
    """The SM clock (MHz) and power (W) NVML reports now, or None where this PyTorch cannot read them."""
    try:
        return float(torch.cuda.clock_rate()), float(torch.cuda.power_draw()) / 1000
    except Exception:  # no pynvml: ask nvidia-smi
        import subprocess

        try:
            line = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                   "-i", "0"], capture_output=True, text=True, timeout=10).stdout.split("\n")[0]
            clock, power = (float(v) for v in line.split(","))
            return clock, power
        except Exception:
            return None, None


# (format, cuBLAS layout, out or N, tokens or M, in or K): TN rows are F.linear(x[tokens, in], W[out, in]),
# NN rows x[M, K] @ W[K, N]; both recorded as cuBLAS sees them (column-major: m = out or N, n = tokens or M).
GEMMS = [(f, "TN", o, t, i) for f in ("bf16", "fp16") for (o, t, i) in (
    (12288, 4096, 4096), (4096, 4096, 4096), (11008, 4096, 4096), (4096, 4096, 11008), (3072, 8192, 4096),
    (1024, 8192, 4096), (4096, 8192, 1024), (14336, 8192, 4096), (4096, 8192, 14336), (8192, 8192, 8192),
    (28672, 4096, 8192), (8192, 4096, 28672), (1280, 16384, 5120), (5120, 16384, 1280), (128256, 4096, 4096),
    (16384, 16384, 128), (8192, 8192, 256), (8192, 128, 8192), (8192, 512, 8192))] + \
    [(f, "NN", n, m, k) for f in ("bf16", "tf32") for (m, n, k) in (
        (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 128), (128, 8192, 8192),
        (1024, 1024, 4096), (2048, 8192, 2048))] + \
    [("bf16", "TN", o, t, i) for (o, t, i) in (
        (50257, 4096, 4096), (50304, 4096, 4096), (4096, 4095, 4096), (4096, 4096, 4095), (4095, 4095, 4095),
        (32001, 2048, 4096), (4096, 2048, 32001), (5504, 2048, 4096), (4096, 2048, 5504), (8192, 4096, 512),
        (2048, 4096, 512))]


# Leading dimensions that are not multiples of 16 bytes, one at a time (TN: m is ldc, k is lda and ldb, n none) and
# in formats of 2 and 4 bytes: cuBLAS then leaves its fast kernels, by a factor that depends on which one is odd.
GEMMS_ALIGNMENT = [(f, "TN", o, t, i) for f in ("bf16", "fp16") for (o, t, i) in (
    (49999, 4096, 4096), (30001, 4096, 2048), (12289, 4096, 4096), (8193, 8192, 4096), (4097, 8192, 4096),
    (16383, 2048, 8192), (4096, 4096, 4097), (8192, 2048, 12289), (8192, 4096, 8193), (8192, 4097, 8192),
    (8192, 2047, 4096))] + [("tf32", "NN", n, m, k) for (m, n, k) in (
        (4096, 4097, 4096), (4096, 4096, 4097), (4097, 4096, 4096))]


def gemms(out, quick, deadline, shapes=None):
    """GEMMs through PyTorch (see the module's docstring)."""
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = True
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}
    target = 0.005 if quick else 0.02  # seconds of GEMMs between the two events of a back-to-back sample
    for fmt, layout, m, n, k in shapes or GEMMS:
        if time.time() > deadline:
            print("xc_torch: gemms: budget spent, the rest skipped", file=sys.stderr)
            return
        dt = dtypes[fmt]
        g = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
        if layout == "TN":  # F.linear(x[n, k], W[m, k]) = x @ W.T
            x = torch.randn(n, k, device="cuda", dtype=dt, generator=g)
            w = torch.randn(m, k, device="cuda", dtype=dt, generator=g)
            call, library = (lambda: F.linear(x, w)), "torch.nn.functional.linear"
        else:  # x[n, k] @ w[k, m]: cuBLAS NN with m and n swapped
            x = torch.randn(n, k, device="cuda", dtype=dt, generator=g)
            w = torch.randn(k, m, device="cuda", dtype=dt, generator=g)
            call, library = (lambda: x @ w), "torch.matmul"
        flops = 2.0 * m * n * k
        nbytes = (m * k + k * n + m * n) * x.element_size()
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        once = events_time(call, 3)
        reps = max(1, min(1000, int(target / max(once, 1e-7))))
        shape = dict(m=m, n=n, k=k, batch=1, layout=layout, dtype=fmt, flops=flops, library=library,
                     torch=torch.__version__, data="normal")
        variant = fmt
        for method, per_sample, samples_n in (("torch_events_b2b", reps, 3 if quick else 10),
                                              ("torch_events_single", 1, 5 if quick else 20)):
            before = gpu_state()
            samples = []
            for _ in range(samples_n):
                if per_sample == 1:
                    torch.cuda.synchronize()
                samples.append(events_time(call, per_sample))
            after = gpu_state()
            clocks = [c for c in (before[0], after[0]) if c]
            powers = [p for p in (before[1], after[1]) if p]
            extras = dict(shape, calls_per_sample=per_sample)
            if clocks:
                extras["sm_clock_mhz"] = statistics.mean(clocks)
            if powers:
                extras["power_w"] = statistics.mean(powers)
            out.write(method, "compute", "gemm", variant, [0], nbytes, samples,
                      **extras, id_suffix=f"{layout}_m{m}_n{n}_k{k}-{method}")
        del x, w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--prefix", default="xc-torch")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=60, help="seconds; later parts are skipped past it")
    ap.add_argument("--max-bytes", type=int, default=2**30)
    ap.add_argument("--distributed", action="store_true", help="the two-GPU all_reduce part only")
    ap.add_argument("--parts", default="dispatch,copies,gemms",
                    help="comma-separated: dispatch, copies, gemms, gemms_alignment")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.distributed:
        import torch.multiprocessing as mp

        world = torch.cuda.device_count()
        if world < 2:
            print("xc_torch: --distributed needs two GPUs", file=sys.stderr)
            return 1
        mp.spawn(distributed_worker, args=(world, a.out, a.prefix, a.quick, a.budget), nprocs=world)
        return 0
    deadline = time.time() + a.budget
    out = Traces(a.out, a.prefix, header())
    torch.cuda.init()
    parts = set(a.parts.split(","))
    if "dispatch" in parts:
        dispatch_costs(out, a.quick, deadline)
    if "copies" in parts:
        copies(out, a.quick, deadline, a.max_bytes)
    if "gemms" in parts:
        gemms(out, a.quick, deadline)
    if "gemms_alignment" in parts:
        gemms(out, a.quick, deadline, GEMMS_ALIGNMENT)
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
