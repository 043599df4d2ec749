#!/usr/bin/env python3
"""Whole training steps on GPU 0, for snsim's `compute` family (test `train_step`): small GPT-style and
Llama-style decoders in plain PyTorch, eager, so that every kernel of a step is one a simulator can rebuild.

    python3 tools/probe/torch/train_steps.py --out h200x1-compute-steps.jsonl --kernels-out kernels.json

A step is exactly:
  optimizer.zero_grad(set_to_none=True)
  with torch.autocast("cuda", dtype=torch.bfloat16):      # fp32 parameters, bf16 matmuls and attention
      logits = model(tokens)                               # embedding (+ learned positions for GPT), L blocks,
                                                           # final norm, untied lm_head (no bias)
      loss = cross_entropy(logits.view(-1, vocab), targets)   # autocast runs it in fp32
  loss.backward()
  optimizer.step()                                         # torch.optim.AdamW(fused=True), fp32 moments
GPT block:   x += proj(attn(LayerNorm(x)));  x += fc2(gelu_tanh(fc1(LayerNorm(x))))   (biases on every Linear)
Llama block: x += proj(attn(RMSNorm(x)));    x += down(silu(gate) * up),  [gate, up] = gate_up(RMSNorm(x)).chunk(2)
             (no biases; rotary on q and k with cached bf16 cos/sin; GQA through SDPA's enable_gqa, or K/V
             repeated when the flash backend refuses it: extra `gqa_impl`)
attn: fused QKV Linear, q/k/v as [B, H, S, D] views, scaled_dot_product_attention(is_causal=True) with PyTorch's own
backend choice (the profiled step's attention kernels are recorded), output projection. No dropout.
Timing: 3 warm-up steps, then steps back to back with an event between consecutive steps (no host synchronisation
inside the loop: the host's launch rate is part of a step, as in a real loop); a sample = one step.
The per-kernel breakdown of one further step of each model (torch.profiler: kernel name, count, total time) goes
to --kernels-out: of the (2, 4096) shape only, or of every shape with --profile-shapes all. --kineto-dir also writes
each profiled step as a Kineto trace with the ops' input shapes (<model>-b<batch>-s<seq>.kineto.json.gz), so that
every kernel of a step can be matched to the op and shape that launched it.
"""

import argparse
import gzip
import json
import os
import shutil
import tempfile
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, __import__("os").path.dirname(__file__))
import snsim_trace  # noqa: E402

H200_DENSE_BF16 = 989.4e12  # datasheet dense bf16 FLOP/s (SXM), for the MFU extra only

MODELS = {
    "gpt-h2048-l8": dict(arch="gpt", layers=8, hidden=2048, heads=16, kv_heads=16, ffn=8192, vocab=50304),
    "gpt-h4096-l4": dict(arch="gpt", layers=4, hidden=4096, heads=32, kv_heads=32, ffn=16384, vocab=50304),
    "llama-h2048-l8": dict(arch="llama", layers=8, hidden=2048, heads=16, kv_heads=4, ffn=5632, vocab=32000),
    "llama-h4096-l4": dict(arch="llama", layers=4, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256),
}
SHAPES = [(1, 2048), (4, 2048), (1, 4096), (2, 4096)]  # (micro batch, sequence)
PROFILED_SHAPE = (2, 4096)


def flash_takes_gqa():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, 8, 256, 128, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(1, 2, 256, 128, device="cuda", dtype=torch.bfloat16)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
        return True
    except Exception:  # noqa: BLE001
        return False


class Block(nn.Module):
    def __init__(self, cfg, gqa_native):
        super().__init__()
        h, self.heads, self.kv_heads = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
        self.head_dim = h // self.heads
        self.llama = cfg["arch"] == "llama"
        self.gqa_native = gqa_native
        bias = not self.llama
        norm = (lambda: nn.RMSNorm(h, eps=1e-5)) if self.llama else (lambda: nn.LayerNorm(h, eps=1e-5))
        self.norm1, self.norm2 = norm(), norm()
        self.qkv = nn.Linear(h, (self.heads + 2 * self.kv_heads) * self.head_dim, bias=bias)
        self.proj = nn.Linear(self.heads * self.head_dim, h, bias=bias)
        if self.llama:
            self.gate_up = nn.Linear(h, 2 * cfg["ffn"], bias=False)
            self.down = nn.Linear(cfg["ffn"], h, bias=False)
        else:
            self.fc1 = nn.Linear(h, cfg["ffn"])
            self.fc2 = nn.Linear(cfg["ffn"], h)

    def attention(self, x, rope):
        b, s, _ = x.shape
        d = self.head_dim
        q, k, v = self.qkv(x).split([self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1)
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.kv_heads, d).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, d).transpose(1, 2)
        if rope is not None:
            cos, sin = rope
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        gqa = self.kv_heads != self.heads
        if gqa and not self.gqa_native:
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa and self.gqa_native)
        return self.proj(y.transpose(1, 2).reshape(b, s, self.heads * d))

    def forward(self, x, rope):
        x = x + self.attention(self.norm1(x), rope)
        if self.llama:
            gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(gate) * up)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))


def apply_rotary(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Decoder(nn.Module):
    def __init__(self, cfg, seq, gqa_native):
        super().__init__()
        self.cfg = cfg
        h = cfg["hidden"]
        self.embed = nn.Embedding(cfg["vocab"], h)
        self.llama = cfg["arch"] == "llama"
        if not self.llama:
            self.positions = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(Block(cfg, gqa_native) for _ in range(cfg["layers"]))
        self.norm = nn.RMSNorm(h, eps=1e-5) if self.llama else nn.LayerNorm(h, eps=1e-5)
        self.lm_head = nn.Linear(h, cfg["vocab"], bias=False)
        d = h // cfg["heads"]
        inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos().to(torch.bfloat16), persistent=False)
        self.register_buffer("sin", angles.sin().to(torch.bfloat16), persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        if not self.llama:
            x = x + self.positions(torch.arange(tokens.shape[1], device=tokens.device))
        rope = (self.cos, self.sin) if self.llama else None
        for block in self.blocks:
            x = block(x, rope)
        return self.lm_head(self.norm(x))


def step_flops(cfg, batch, seq):
    """Matmul FLOPs of one step: forward GEMMs x 3 (forward, dgrad, wgrad) and causal attention x 3.5 (forward,
    then a backward of 2.5 x the forward with the recomputation flash attention does)."""
    h, heads, kv, ffn, vocab, layers = (cfg[k] for k in ("hidden", "heads", "kv_heads", "ffn", "vocab", "layers"))
    d = h // heads
    tokens = batch * seq
    per_layer = h * (heads + 2 * kv) * d + heads * d * h + (3 if cfg["arch"] == "llama" else 2) * h * ffn
    gemm_fwd = 2.0 * tokens * (layers * per_layer + h * vocab)
    attention_fwd = layers * 4.0 * batch * heads * seq * seq * d * 0.5
    return 3 * gemm_fwd + 3.5 * attention_fwd, gemm_fwd, attention_fwd


def make_step(model, opt, tokens, targets, vocab):
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens)
            loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        loss.backward()
        opt.step()
        return loss

    return step


def profile_step(step, kineto_path=None):
    """Kernels of one step: {name: [count, total seconds]}, the GPU's busy time and the span first-to-last kernel.
    With kineto_path, the step's Kineto trace (ops with their input shapes) is written there, gzipped."""
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=snsim_trace.PROFILER_ACTIVITIES, record_shapes=bool(kineto_path)) as prof:
        step()
        torch.cuda.synchronize()
    if kineto_path:
        with tempfile.TemporaryDirectory() as tmp:
            plain = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(plain)
            with open(plain, "rb") as src, gzip.open(kineto_path, "wb") as dst:
                shutil.copyfileobj(src, dst)
    table = {}
    starts, ends = [], []
    for name, start, duration in snsim_trace.cuda_kernels(prof):
        entry = table.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += duration * 1e-6
        starts.append(start)
        ends.append(start + duration)
    busy = sum(entry[1] for entry in table.values())
    span = (max(ends) - min(starts)) * 1e-6 if starts else 0.0
    return table, busy, span


def attention_kernels(table):
    keys = ("flash", "fmha", "cudnn", "attention", "sdpa", "efficient")
    return sorted(name for name in table if any(k in name.lower() for k in keys))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--kernels-out", required=True)
    parser.add_argument("--quick", action="store_true", help="one model, one shape, few steps")
    parser.add_argument("--budget-seconds", type=float, default=0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--profile-shapes", choices=["default", "all"], default="default",
                        help="profile the (2, 4096) shape of each model (default) or every shape")
    parser.add_argument("--kineto-dir", default="", help="also write each profiled step's Kineto trace here")
    parser.add_argument("--models", default="", help="comma-separated model names (default: all): " + ", ".join(MODELS))
    args = parser.parse_args()
    torch.manual_seed(0)
    started = time.time()
    if args.kineto_dir:
        os.makedirs(args.kineto_dir, exist_ok=True)
    gqa_native = flash_takes_gqa()
    writer = snsim_trace.TraceWriter(args.out, "tools/probe/torch/train_steps.py",
                                     header_extra={"flash_takes_enable_gqa": gqa_native})
    breakdown = {"schema": "snsim-kernels/1", "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                 "cuda": torch.version.cuda, "tool": "tools/probe/torch/train_steps.py", "models": []}
    wanted = [m for m in args.models.split(",") if m]
    unknown = [m for m in wanted if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {unknown[0]}; known: {', '.join(MODELS)}")
    models = [(n, c) for n, c in MODELS.items() if not wanted or n in wanted]
    models = models[:1] if args.quick else models
    shapes = SHAPES[:1] if args.quick else SHAPES
    steps = 3 if args.quick else args.steps
    for name, cfg in models:
        for batch, seq in shapes:
            if args.budget_seconds and time.time() - started > args.budget_seconds:
                print(f"train_steps: budget reached before {name} b{batch} s{seq}", file=sys.stderr)
                break
            try:
                model = Decoder(cfg, seq, gqa_native).cuda()
                params = sum(p.numel() for p in model.parameters())
                embedding = model.embed.weight.numel() + model.lm_head.weight.numel() + (
                    0 if model.llama else model.positions.weight.numel())
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
                tokens = torch.randint(0, cfg["vocab"], (batch, seq), device="cuda")
                targets = torch.randint(0, cfg["vocab"], (batch, seq), device="cuda")
                step = make_step(model, opt, tokens, targets, cfg["vocab"])
                for _ in range(3):
                    step()
                torch.cuda.synchronize()
                events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
                host_start = time.perf_counter()
                events[0].record()
                for i in range(steps):
                    step()
                    events[i + 1].record()
                torch.cuda.synchronize()
                host_per_step = (time.perf_counter() - host_start) / steps
                samples = [events[i].elapsed_time(events[i + 1]) * 1e-3 for i in range(steps)]
                telemetry = writer.telemetry.read()
                flops, gemm_fwd, attention_fwd = step_flops(cfg, batch, seq)
                median = sorted(samples)[len(samples) // 2]
                profiled = {}
                if (batch, seq) == PROFILED_SHAPE or args.quick or args.profile_shapes == "all":
                    kineto = (os.path.join(args.kineto_dir, f"{name}-b{batch}-s{seq}.kineto.json.gz")
                              if args.kineto_dir else None)
                    table, busy, span = profile_step(step, kineto)
                    profiled = {"attention_kernels": attention_kernels(table), "profiled_kernel_busy_s": busy,
                                "profiled_kernel_span_s": span, "profiled_kernels": sum(c for c, _ in table.values())}
                    breakdown["models"].append({
                        "model": name, **cfg, "batch": batch, "seq": seq, "step_median_s": median,
                        "kernel_busy_s": busy, "kernel_span_s": span,
                        "kernels": [{"name": k, "count": c, "total_s": t}
                                    for k, (c, t) in sorted(table.items(), key=lambda item: -item[1][1])]})
                writer.emit(
                    "train_step", name, 0, samples, suffix=f"b{batch}_s{seq}", method="events_between_steps",
                    arch=cfg["arch"], layers=cfg["layers"], hidden=cfg["hidden"], heads=cfg["heads"],
                    kv_heads=cfg["kv_heads"], head_dim=cfg["hidden"] // cfg["heads"], ffn=cfg["ffn"],
                    vocab=cfg["vocab"], micro_batch=batch, seq=seq, tokens=batch * seq, params=params,
                    params_non_embedding=params - embedding,
                    norm="RMSNorm" if model.llama else "LayerNorm",
                    mlp="SwiGLU (fused gate_up Linear, silu(gate)*up, down)" if model.llama else
                        "fc1, gelu(tanh), fc2",
                    positions="rotary (theta 500000, cached bf16 cos/sin)" if model.llama else "learned",
                    linear_bias=not model.llama, tied_embeddings=False, dropout=0.0,
                    attention="fused QKV; scaled_dot_product_attention(is_causal=True), PyTorch's backend choice",
                    gqa_impl=("enable_gqa" if gqa_native else "repeat_interleave K/V")
                    if cfg["kv_heads"] != cfg["heads"] else "none (MHA)",
                    precision="torch.autocast(bf16); fp32 parameters and gradients",
                    loss="cross_entropy on logits.view(-1, vocab) (fp32 under autocast)",
                    optimizer="torch.optim.AdamW(fused=True, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)",
                    step_contains=["zero_grad(set_to_none=True)", "forward under autocast", "cross_entropy",
                                   "backward", "AdamW.step"],
                    compile="eager (no torch.compile)", warmup_steps=3, host_per_step_s=host_per_step,
                    flops=flops, gemm_flops_fwd=gemm_fwd, attention_flops_fwd=attention_fwd,
                    tflops=flops / median / 1e12, mfu_vs_989tflops=flops / median / H200_DENSE_BF16,
                    peak_memory_bytes=torch.cuda.max_memory_allocated(), **profiled, **telemetry)
                del model, opt, step
            except Exception as error:  # noqa: BLE001
                print(f"  skipped {name} b{batch} s{seq}: {type(error).__name__}: {error}", file=sys.stderr)
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    writer.close()
    with open(args.kernels_out, "w", encoding="utf-8") as out:
        json.dump(breakdown, out, indent=1)
    print(f"train_steps: {writer.records} records, {time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
