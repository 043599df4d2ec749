#!/usr/bin/env python3
"""Training steps captured the way users capture their own jobs, for `snsim replay` (trace replay): the PyTorch
profiler's Kineto trace (Chrome trace JSON) and the PyTorch execution trace (the input of MLCommons Chakra's
converter) of a few steady-state steps, beside the same steps timed without the profiler.

    python3 tools/probe/torch/profile_steps.py --out-dir DIR

For each case DIR gets CASE.kineto.json.gz (kernels and CPU ops, no shapes: the lightest profile),
CASE.shapes.kineto.json.gz with CASE.et.json.gz (operator shapes and the execution trace, from one profiled run: what
Chakra's tools link), and two lines in steps.jsonl (snsim-trace/1, test
`train_step`, variant CASE) with the unprofiled step time measured two ways:
  method events_between_steps: steps back to back, a CUDA event between consecutive steps (no host sync);
  method host_sync_per_step:   wall clock of step + torch.cuda.synchronize(), one step at a time.
The profiled steps' own GPU spans (first kernel start to last kernel end, per ProfilerStep) are in the records too,
so that the profiler's overhead is visible.

The model and step are train_steps.py's (GPT- or Llama-style decoder, autocast bf16, fused AdamW), a few layers so
that the traces stay small. The `ddp` cases wrap the model in DistributedDataParallel on a one-rank NCCL process
group, so that the traces hold the gradient all-reduces (record_param_comms, ncclDevKernel) a multi-GPU job has.
"""

import argparse
import gzip
import json
import os
import shutil
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import snsim_trace  # noqa: E402
import train_steps  # noqa: E402

CASES = {
    # name: (model config, micro batch, sequence, DDP)
    "gpt-h2048-l2-b2-s2048": (dict(train_steps.MODELS["gpt-h2048-l8"], layers=2), 2, 2048, False),
    "llama-h2048-l2-b2-s2048": (dict(train_steps.MODELS["llama-h2048-l8"], layers=2), 2, 2048, False),
    "gpt-h4096-l2-b1-s4096": (dict(train_steps.MODELS["gpt-h4096-l4"], layers=2), 1, 4096, False),
    "gpt-h2048-l2-b2-s2048-ddp": (dict(train_steps.MODELS["gpt-h2048-l8"], layers=2), 2, 2048, True),
}
WARMUP, TIMED, PROFILED = 5, 20, 3


def init_one_rank_group():
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    return dist


def gzip_file(path):
    with open(path, "rb") as raw, gzip.open(path + ".gz", "wb", compresslevel=9) as packed:
        shutil.copyfileobj(raw, packed)
    os.remove(path)
    return path + ".gz"


def profiled_step_spans(kineto_path):
    """GPU span of each ProfilerStep: the first to the last GPU kernel/memcpy/memset whose launch lies in it."""
    with gzip.open(kineto_path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                   and str(e.get("name", "")).startswith("ProfilerStep#"))
    launches = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = e["ts"]
    spans = []
    for begin, end in steps:
        gpu = [(e["ts"], e["ts"] + e["dur"]) for e in events
               if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and begin <= launches.get(e.get("args", {}).get("correlation"), -1) < end]
        if gpu:
            spans.append((max(g[1] for g in gpu) - min(g[0] for g in gpu)) * 1e-6)
    return spans


def profile(step, kineto_path, detailed, et_path=None):
    """PROFILED steady-state steps after 2 warm-up steps, one trace. `detailed` records operator shapes and, with
    `et_path`, the execution trace: more host work per op, so the two traces show the profiler's own cost."""
    observer = torch.profiler.ExecutionTraceObserver().register_callback(et_path) if et_path else None
    schedule = torch.profiler.schedule(wait=0, warmup=2, active=PROFILED, repeat=1)
    with torch.profiler.profile(activities=snsim_trace.PROFILER_ACTIVITIES, schedule=schedule, record_shapes=detailed,
                                execution_trace_observer=observer,
                                on_trace_ready=lambda p: p.export_chrome_trace(kineto_path)) as prof:
        for _ in range(2 + PROFILED):  # no host sync inside: the host runs ahead, as in a training loop
            step()
            prof.step()
        torch.cuda.synchronize()
    if et_path:
        gzip_file(et_path)
    return gzip_file(kineto_path)


def run_case(name, cfg, batch, seq, ddp, out_dir, writer, gqa_native):
    model = train_steps.Decoder(cfg, seq, gqa_native).cuda()
    params = sum(p.numel() for p in model.parameters())
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0], bucket_cap_mb=25)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    tokens = torch.randint(0, cfg["vocab"], (batch, seq), device="cuda")
    targets = torch.randint(0, cfg["vocab"], (batch, seq), device="cuda")
    step = train_steps.make_step(model, opt, tokens, targets, cfg["vocab"])
    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()

    events = [torch.cuda.Event(enable_timing=True) for _ in range(TIMED + 1)]
    events[0].record()
    for i in range(TIMED):
        step()
        events[i + 1].record()
    torch.cuda.synchronize()
    between = [events[i].elapsed_time(events[i + 1]) * 1e-3 for i in range(TIMED)]

    synced = []
    for _ in range(TIMED):
        begin = time.perf_counter()
        step()
        torch.cuda.synchronize()
        synced.append(time.perf_counter() - begin)

    kineto = profile(step, os.path.join(out_dir, f"{name}.kineto.json"), detailed=False)
    shapes_kineto = profile(step, os.path.join(out_dir, f"{name}.shapes.kineto.json"), detailed=True,
                            et_path=os.path.join(out_dir, f"{name}.et.json"))
    et = os.path.join(out_dir, f"{name}.et.json.gz")
    spans = profiled_step_spans(kineto)
    shapes_spans = profiled_step_spans(shapes_kineto)
    flops, _, _ = train_steps.step_flops(cfg, batch, seq)
    median = sorted(between)[len(between) // 2]
    common = dict(arch=cfg["arch"], layers=cfg["layers"], hidden=cfg["hidden"], heads=cfg["heads"],
                  kv_heads=cfg["kv_heads"], ffn=cfg["ffn"], vocab=cfg["vocab"], micro_batch=batch, seq=seq,
                  params=params, ddp_one_rank=ddp, flops=flops, mfu_vs_989tflops=flops / median / 989.4e12,
                  kineto_trace=os.path.basename(kineto), profiled_step_gpu_span_s=spans,
                  kineto_trace_with_shapes=os.path.basename(shapes_kineto), execution_trace=os.path.basename(et),
                  profiled_step_gpu_span_with_shapes_and_et_s=shapes_spans, step_contains=["zero_grad(set_to_none=True)",
                                                                 "forward under autocast", "cross_entropy",
                                                                 "backward" + (" (DDP bucketed all-reduce)" if ddp
                                                                               else ""), "AdamW.step"],
                  **writer.telemetry.read())
    writer.emit("train_step", name, 0, between, suffix="events", method="events_between_steps", **common)
    writer.emit("train_step", name, 0, synced, suffix="synced", method="host_sync_per_step", **common)
    print(f"  {name}: {median * 1e3:.2f} ms between events, {sorted(synced)[TIMED // 2] * 1e3:.2f} ms synced, "
          f"profiled spans {[round(s * 1e3, 2) for s in spans]} ms, with shapes and ET "
          f"{[round(s * 1e3, 2) for s in shapes_spans]} ms", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--cases", default="", help="comma-separated (default: all): " + ", ".join(CASES))
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    gqa_native = train_steps.flash_takes_gqa()
    writer = snsim_trace.TraceWriter(os.path.join(args.out_dir, "steps.jsonl"), "tools/probe/torch/profile_steps.py",
                                     header_extra={"flash_takes_enable_gqa": gqa_native})
    wanted = [c for c in args.cases.split(",") if c] or list(CASES)
    group = None
    for name in wanted:
        cfg, batch, seq, ddp = CASES[name]
        if ddp and group is None:
            group = init_one_rank_group()
        try:
            run_case(name, cfg, batch, seq, ddp, args.out_dir, writer, gqa_native)
        except Exception as error:  # noqa: BLE001 - one failed case must not lose the others
            print(f"  skipped {name}: {type(error).__name__}: {error}", file=sys.stderr)
        torch.cuda.empty_cache()
    writer.close()
    if group is not None:
        group.destroy_process_group()


if __name__ == "__main__":
    main()
