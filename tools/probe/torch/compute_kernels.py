#!/usr/bin/env python3
"""The PyTorch-driven part of snsim-probe's `compute` family: framework kernels and fused attention on GPU 0.

    python3 tools/probe/torch/compute_kernels.py --out h200x1-compute-torch.jsonl [--quick] [--budget-seconds N]

Tests (family `compute`, one record per (op, shape); README.md "compute" lists the fields):
  memory_bound    layernorm / rmsnorm / softmax / gelu / swiglu / rotary forward and backward, residual add, casts,
                  copy, cross-entropy (vocab 32k-256k) forward and backward, by size; variant = op
  memory_bound    (autocast_ops) what PyTorch's autocast adds to a training step of fp32 parameters: layernorm and
                  rmsnorm over an fp32 residual stream (variants layernorm_fp32_fwd, ...), the residual add of a bf16
                  output into it (add_fp32_bf16) and its gradient's add (add_fp32), bias gradients (bias_grad: dy.sum(0)
                  over bf16 [tokens, out]), fills of fp32 gradients (fill_fp32), the QKV split's backward (cat3: torch.cat
                  of three bf16 [tokens, width]) and the embedding's backward into an fp32 table (embedding_bwd)
  adamw           torch.optim.AdamW(fused=True).step() over fp32 parameters, by parameter count
  attention       torch.nn.functional.scaled_dot_product_attention forward and backward with one backend forced
                  (flash, cudnn, efficient): sequence 1k-32k, head dims 64 and 128, causal or not, MHA or GQA
  attention_unfused  matmul - (causal mask) - fp32 softmax - matmul, forward and backward, as eager models do
Every record: method `events_queued` (calls queued behind torch.cuda._sleep, an event between consecutive calls,
a sample = one call's device time), `bytes` = the bytes the op must move at least (each input read once, each output
written once; `bytes_formula` says which), `kernels` = the CUDA kernels one call launched (torch.profiler, one call
at one size per op), and the SM clock and power NVML read right after the timed calls.
"""

import argparse
import math
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, __import__("os").path.dirname(__file__))
import snsim_trace  # noqa: E402

L2_BYTES = 60 * 2**20
ROTATE_BYTES = 256 * 2**20  # inputs rotate among copies until a call's sets span ~4x L2
BF16 = torch.bfloat16


def sets_for(nbytes):
    return int(max(1, min(8, math.ceil(ROTATE_BYTES / max(nbytes, 1)))))


class Capture:
    def __init__(self, args):
        self.args = args
        self.writer = snsim_trace.TraceWriter(args.out, "tools/probe/torch/compute_kernels.py",
                                              header_extra={"sdpa_backends": sdpa_flags()})
        self.started = time.time()
        self.kernel_names = {}  # op label -> kernel names, from one profiled call
        self.skipped = []

    def left(self):
        return self.args.budget_seconds - (time.time() - self.started) if self.args.budget_seconds else 1e9

    def profile_kernels(self, label, call):
        """The CUDA kernels one call of `call` launches (once per label)."""
        if label in self.kernel_names:
            return self.kernel_names[label]
        names = []
        try:
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=snsim_trace.PROFILER_ACTIVITIES) as prof:
                call(0)
                torch.cuda.synchronize()
            names = [name for name, _, _ in sorted(snsim_trace.cuda_kernels(prof), key=lambda k: k[1])]
        except Exception as error:  # noqa: BLE001 - the names are a help, never a reason to lose the timing
            names = [f"unavailable: {error}"]
        self.kernel_names[label] = names
        return names

    def measure(self, test, variant, suffix, nbytes, call, estimate_s, extras, profile_label=None, flops=None):
        reps = 3 if self.args.quick else snsim_trace.reps_for(estimate_s)
        warmup = 1 if self.args.quick else max(2, min(10, round(0.003 / max(estimate_s, 1e-7))))
        samples = snsim_trace.time_calls(call, reps, warmup=warmup)
        telemetry = self.writer.telemetry.read()
        median = sorted(samples)[len(samples) // 2]
        extras = dict(extras)
        extras["gbps"] = nbytes / median / 1e9 if nbytes else 0.0
        if flops:
            extras["flops"] = flops
            extras["tflops"] = flops / median / 1e12
        extras["warmup"] = warmup
        if profile_label:
            extras["kernels"] = self.profile_kernels(profile_label, call)
        extras.update(telemetry)
        self.writer.emit(test, variant, nbytes, samples, suffix=suffix, method="events_queued", **extras)

    # ---- memory-bound kernels ----

    def row_ops(self):
        """Ops over [rows, hidden] tensors: the norms, softmax and rotary, forward and backward."""
        hiddens = [4096] if self.args.quick else [2048, 4096, 8192]
        elements = [2**22] if self.args.quick else [2**20, 2**22, 2**24, 2**26, 2**28]
        s = 2  # bf16
        for op in ["layernorm", "rmsnorm", "softmax", "rotary"]:
            for hidden in hiddens:
                for n in elements:
                    if self.left() < 0:
                        return
                    rows = n // hidden
                    try:
                        self.row_op(op, rows, hidden, s)
                    except Exception as error:  # noqa: BLE001
                        self.skip(f"{op} {rows}x{hidden}", error)

    def row_op(self, op, rows, hidden, s, tag=""):
        """`s` bytes per element: 2 (bf16) or 4 (fp32, variant op + `tag`: autocast's norms of an fp32 stream)."""
        n = rows * hidden
        sets = sets_for(2 * n * s)
        dtype = BF16 if s == 2 else torch.float32
        xs = [torch.randn(rows, hidden, device="cuda", dtype=dtype) for _ in range(sets)]
        extras = {"op": op, "dtype": "bf16" if s == 2 else "fp32", "rows": rows, "hidden": hidden, "elements": n,
                  "operand_sets": sets}
        if op == "layernorm":
            weight = torch.randn(hidden, device="cuda", dtype=dtype)
            bias = torch.randn(hidden, device="cuda", dtype=dtype)
            fwd = lambda x: F.layer_norm(x, (hidden,), weight, bias, 1e-5)  # noqa: E731
            impl, params = "torch.nn.functional.layer_norm (weight, bias)", (weight, bias)
        elif op == "rmsnorm":
            weight = torch.randn(hidden, device="cuda", dtype=dtype)
            fwd = lambda x: F.rms_norm(x, (hidden,), weight, 1e-5)  # noqa: E731
            impl, params = "torch.nn.functional.rms_norm (weight)", (weight,)
        elif op == "softmax":
            fwd = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
            impl, params = "torch.softmax(dim=-1)", ()
        else:  # rotary on [tokens, heads, 128] with cos/sin [tokens, 128], as HF Llama's apply_rotary_pos_emb
            head_dim = 128
            heads = hidden // head_dim
            xs = [x.view(rows, heads, head_dim) for x in xs]
            angle = torch.randn(rows, 1, head_dim, device="cuda", dtype=torch.float32)
            cos, sin = angle.cos().to(BF16), angle.sin().to(BF16)

            def fwd(x):
                x1, x2 = x[..., :head_dim // 2], x[..., head_dim // 2:]
                return x * cos + torch.cat((-x2, x1), dim=-1) * sin

            impl, params = "x*cos + rotate_half(x)*sin (HF Llama, eager)", ()
            extras.update({"heads": heads, "head_dim": head_dim})
        extras["impl"] = impl
        label = f"{op}{tag}_fwd"
        self.measure("memory_bound", label, f"r{rows}_h{hidden}", 2 * n * s,
                     lambda i: fwd(xs[i % sets]), 2 * n * s / 3e12,
                     dict(extras, bytes_formula="read x, write y"), profile_label=label)
        # Backward: the graph of one forward per set, replayed with retain_graph.
        leaves = [x.detach().requires_grad_(True) for x in xs]
        for p in params:
            p.requires_grad_(True)
        outs = [fwd(x) for x in leaves]
        grads = [torch.randn_like(o) for o in outs]
        inputs = [(leaf,) + tuple(params) for leaf in leaves]
        bwd = lambda i: torch.autograd.grad(outs[i % sets], inputs[i % sets], grads[i % sets],  # noqa: E731
                                            retain_graph=True)
        self.measure("memory_bound", f"{op}{tag}_bwd", f"r{rows}_h{hidden}", 3 * n * s, bwd, 3 * n * s / 3e12,
                     dict(extras, bytes_formula="read x (or y) and dy, write dx"), profile_label=f"{op}{tag}_bwd")

    def elementwise_ops(self):
        sizes = [2**22] if self.args.quick else [2**k for k in range(20, 29)]
        for op in ["gelu", "swiglu", "add", "copy", "cast_bf16_fp32", "cast_fp32_bf16", "cast_bf16_fp8", "cast_fp32_fp8"]:
            for n in sizes:
                if self.left() < 0:
                    return
                try:
                    self.elementwise(op, n)
                except Exception as error:  # noqa: BLE001
                    self.skip(f"{op} {n}", error)

    def elementwise(self, op, n):
        extras = {"op": op, "elements": n}
        if op in ("gelu", "swiglu"):
            width = 2 if op == "swiglu" else 1
            sets = sets_for(3 * n * 2)
            xs = [torch.randn(n * width, device="cuda", dtype=BF16) for _ in range(sets)]
            if op == "gelu":
                fwd = lambda x: F.gelu(x, approximate="tanh")  # noqa: E731
                extras["impl"] = "torch.nn.functional.gelu(approximate='tanh')"
                fwd_bytes, bwd_bytes = 2 * n * 2, 3 * n * 2
                formulas = ("read x, write y", "read x and dy, write dx")
            else:
                def fwd(x):
                    gate, up = x.chunk(2)
                    return F.silu(gate) * up

                extras["impl"] = "silu(gate) * up on x.chunk(2) (Megatron's unfused SwiGLU, eager)"
                fwd_bytes, bwd_bytes = 3 * n * 2, 5 * n * 2
                formulas = ("read gate and up, write y", "read gate, up and dy, write dgate and dup")
            extras.update({"dtype": "bf16", "operand_sets": sets})
            self.measure("memory_bound", f"{op}_fwd", f"n{n}", fwd_bytes, lambda i: fwd(xs[i % sets]),
                         fwd_bytes / 3e12, dict(extras, bytes_formula=formulas[0]), profile_label=f"{op}_fwd")
            leaves = [x.detach().requires_grad_(True) for x in xs]
            outs = [fwd(x) for x in leaves]
            grads = [torch.randn_like(o) for o in outs]
            bwd = lambda i: torch.autograd.grad(outs[i % sets], (leaves[i % sets],), grads[i % sets],  # noqa: E731
                                                retain_graph=True)
            self.measure("memory_bound", f"{op}_bwd", f"n{n}", bwd_bytes, bwd, bwd_bytes / 3e12,
                         dict(extras, bytes_formula=formulas[1]), profile_label=f"{op}_bwd")
            return
        if op in ("add", "copy"):
            sets = sets_for(3 * n * 2)
            xs = [torch.randn(n, device="cuda", dtype=BF16) for _ in range(sets)]
            ys = [torch.randn(n, device="cuda", dtype=BF16) for _ in range(sets)]
            if op == "add":
                call, nbytes, formula, impl = lambda i: xs[i % sets] + ys[i % sets], 3 * n * 2, "read x and y, write z", "x + y"
            else:
                call, nbytes, formula, impl = lambda i: xs[i % sets].clone(), 2 * n * 2, "read x, write y", "x.clone()"
            self.measure("memory_bound", op, f"n{n}", nbytes, call, nbytes / 3e12,
                         dict(extras, dtype="bf16", impl=impl, bytes_formula=formula, operand_sets=sets),
                         profile_label=op)
            return
        source, target = op.split("_")[1:]
        dtypes = {"bf16": (BF16, 2), "fp32": (torch.float32, 4), "fp8": (torch.float8_e4m3fn, 1)}
        (src_dtype, src_size), (dst_dtype, dst_size) = dtypes[source], dtypes[target]
        nbytes = n * (src_size + dst_size)
        sets = sets_for(nbytes)
        xs = [torch.randn(n, device="cuda", dtype=src_dtype) for _ in range(sets)]
        self.measure("memory_bound", op, f"n{n}", nbytes, lambda i: xs[i % sets].to(dst_dtype), nbytes / 3e12,
                     dict(extras, dtype=f"{source}->{target}", impl=f"x.to({dst_dtype})", operand_sets=sets,
                          bytes_formula="read x, write y"), profile_label=op)

    def autocast_ops(self):
        """The kernels an autocast training step of fp32 parameters runs besides the bf16 ones (train_steps.py's)."""
        hiddens = [4096] if self.args.quick else [2048, 4096, 8192]
        tokens = [2048] if self.args.quick else [512, 2048, 8192, 32768]
        shapes = [(t, hidden) for hidden in hiddens for t in tokens]
        embeddings = ([(2048, 32000, 2048)] if self.args.quick else
                      [(t, v, h) for t in (2048, 8192) for v in (32000, 50304, 128256) for h in (2048, 4096)])
        cases = ([(f"{op} fp32", lambda t, h, op=op: self.row_op(op, t, h, 4, tag="_fp32"), shape)
                  for op in ("layernorm", "rmsnorm") for shape in shapes]
                 + [("autocast elementwise", self.autocast_elementwise, shape) for shape in shapes]
                 + [("rotary_heads", self.rotary_heads, shape) for shape in shapes]
                 + [("swiglu_chunked", self.swiglu_chunked, shape) for shape in shapes]
                 + [("embedding_bwd", self.embedding_backward, shape) for shape in embeddings])
        for label, measure, shape in cases:
            if self.left() < 0:
                return
            try:
                measure(*shape)
            except Exception as error:  # noqa: BLE001 - one failed shape must not lose the others
                self.skip(f"{label} {'x'.join(str(x) for x in shape)}", error)

    def autocast_elementwise(self, t, hidden):
        n = t * hidden
        shape = {"tokens": t, "hidden": hidden, "elements": n}
        sets = sets_for(10 * n)
        xs = [torch.randn(t, hidden, device="cuda", dtype=torch.float32) for _ in range(sets)]
        ys = [torch.randn(t, hidden, device="cuda", dtype=BF16) for _ in range(sets)]
        zs = [torch.randn(t, hidden, device="cuda", dtype=torch.float32) for _ in range(sets)]
        self.measure("memory_bound", "add_fp32_bf16", f"t{t}_h{hidden}", 10 * n, lambda i: xs[i % sets] + ys[i % sets],
                     10 * n / 3e12, dict(shape, op="add_fp32_bf16", dtype="fp32+bf16->fp32", operand_sets=sets,
                                         impl="x + y (x fp32, y bf16): the residual add under autocast",
                                         bytes_formula="read x and y, write z"), profile_label="add_fp32_bf16")
        self.measure("memory_bound", "add_fp32", f"t{t}_h{hidden}", 12 * n, lambda i: xs[i % sets].add_(zs[i % sets]),
                     12 * n / 3e12, dict(shape, op="add_fp32", dtype="fp32", operand_sets=sets,
                                         impl="x.add_(y) (fp32): a residual gradient's accumulation",
                                         bytes_formula="read x and y, write x"), profile_label="add_fp32")
        self.measure("memory_bound", "fill_fp32", f"t{t}_h{hidden}", 4 * n, lambda i: xs[i % sets].zero_(),
                     4 * n / 3e12, dict(shape, op="fill_fp32", dtype="fp32", operand_sets=sets, impl="x.zero_()",
                                        bytes_formula="write x"), profile_label="fill_fp32")
        # Bias gradients of the linear layers of a GPT block: columns 1x, 3x and 4x hidden.
        for width in (hidden, 3 * hidden, 4 * hidden):
            dys = [torch.randn(t, width, device="cuda", dtype=BF16) for _ in range(sets_for(2 * t * width))]
            k = len(dys)
            nbytes = 2 * t * width + 2 * width
            self.measure("memory_bound", "bias_grad", f"t{t}_h{hidden}_w{width}", nbytes, lambda i: dys[i % k].sum(0),
                         nbytes / 3e12, dict(op="bias_grad", dtype="bf16", tokens=t, width=width, operand_sets=k,
                                             impl="dy.sum(0) over bf16 [tokens, width] (a Linear's bias gradient)",
                                             bytes_formula="read dy, write db"), profile_label="bias_grad")
        # The QKV split's backward: the three gradients concatenated.
        parts = [[torch.randn(t, hidden, device="cuda", dtype=BF16) for _ in range(3)] for _ in range(sets_for(12 * n))]
        k = len(parts)
        self.measure("memory_bound", "cat3", f"t{t}_h{hidden}", 12 * n, lambda i: torch.cat(parts[i % k], dim=-1),
                     12 * n / 3e12, dict(shape, op="cat3", dtype="bf16", operand_sets=k,
                                         impl="torch.cat of three bf16 [tokens, hidden] on the last dim",
                                         bytes_formula="read the three, write their concatenation"),
                     profile_label="cat3")

    def rotary_heads(self, t, hidden):
        """HF Llama's eager RoPE where a model applies it: on q as a [batch, heads, seq, 128] view of the fused QKV
        output (strided, as train_steps.py's Block.attention makes it), not on a contiguous tensor (rotary_fwd)."""
        head_dim, batch = 128, 2 if t >= 4096 else 1
        seq, heads = t // batch, hidden // head_dim
        n = t * hidden
        sets = sets_for(4 * n * 2)
        qkvs = [torch.randn(batch, seq, 3 * hidden, device="cuda", dtype=BF16) for _ in range(sets)]
        angle = torch.randn(seq, head_dim, device="cuda", dtype=torch.float32)
        cos, sin = angle.cos().to(BF16), angle.sin().to(BF16)

        def q_of(qkv):
            return qkv[..., :hidden].view(batch, seq, heads, head_dim).transpose(1, 2)

        def fwd(q):
            q1, q2 = q[..., :head_dim // 2], q[..., head_dim // 2:]
            return q * cos + torch.cat((-q2, q1), dim=-1) * sin

        extras = {"op": "rotary", "layout": "heads_view", "dtype": "bf16", "tokens": t, "hidden": hidden,
                  "heads": heads, "head_dim": head_dim, "batch": batch, "elements": n, "operand_sets": sets,
                  "impl": "x*cos + rotate_half(x)*sin on qkv[..., :h].view(b, s, heads, 128).transpose(1, 2)"}
        self.measure("memory_bound", "rotary_heads_fwd", f"t{t}_h{hidden}", 2 * n * 2,
                     lambda i: fwd(q_of(qkvs[i % sets])), 2 * n * 2 / 3e12,
                     dict(extras, bytes_formula="read x, write y"), profile_label="rotary_heads_fwd")
        # The gradient with respect to the strided view itself (what the QKV split's backward then concatenates).
        leaves = [x.detach().requires_grad_(True) for x in qkvs]
        views = [q_of(x) for x in leaves]
        outs = [fwd(v) for v in views]
        grads = [torch.randn_like(o) for o in outs]
        bwd = lambda i: torch.autograd.grad(outs[i % sets], (views[i % sets],), grads[i % sets],  # noqa: E731
                                            retain_graph=True)
        self.measure("memory_bound", "rotary_heads_bwd", f"t{t}_h{hidden}", 3 * n * 2, bwd, 3 * n * 2 / 3e12,
                     dict(extras, bytes_formula="read x (or y) and dy, write dx"), profile_label="rotary_heads_bwd")

    def swiglu_chunked(self, t, hidden):
        """SwiGLU where a model applies it: silu(gate) * up on the two halves of a fused gate/up GEMM's [t, 2 f]
        output, chunked along its last dimension (strided views, as train_steps.py's Block.forward makes them), not
        on the contiguous halves of a 1-d tensor (swiglu_fwd). f = 2.75 hidden, Llama's ratio rounded to 256."""
        f = (11 * hidden // 4 + 255) // 256 * 256
        n = t * f
        sets = sets_for(4 * n * 2)
        xs = [torch.randn(t, 2 * f, device="cuda", dtype=BF16) for _ in range(sets)]

        def fwd(x):
            gate, up = x.chunk(2, dim=-1)
            return F.silu(gate) * up

        extras = {"op": "swiglu", "layout": "chunk_last_dim", "dtype": "bf16", "tokens": t, "hidden": hidden,
                  "ffn": f, "elements": n, "operand_sets": sets,
                  "impl": "silu(gate) * up on x.chunk(2, dim=-1) of a [tokens, 2 f] bf16 x"}
        self.measure("memory_bound", "swiglu_chunked_fwd", f"t{t}_f{f}", 3 * n * 2, lambda i: fwd(xs[i % sets]),
                     3 * n * 2 / 3e12, dict(extras, bytes_formula="read gate and up, write y"),
                     profile_label="swiglu_chunked_fwd")
        leaves = [x.detach().requires_grad_(True) for x in xs]
        outs = [fwd(x) for x in leaves]
        grads = [torch.randn_like(o) for o in outs]
        bwd = lambda i: torch.autograd.grad(outs[i % sets], (leaves[i % sets],), grads[i % sets],  # noqa: E731
                                            retain_graph=True)
        self.measure("memory_bound", "swiglu_chunked_bwd", f"t{t}_f{f}", 5 * n * 2, bwd, 5 * n * 2 / 3e12,
                     dict(extras, bytes_formula="read gate, up and dy, write dgate and dup"),
                     profile_label="swiglu_chunked_bwd")

    def embedding_backward(self, t, vocab, hidden):
        table = torch.nn.Parameter(torch.randn(vocab, hidden, device="cuda"))
        ids = torch.randint(0, vocab, (t,), device="cuda")
        out = F.embedding(ids, table)
        dy = torch.randn_like(out)
        nbytes = 4 * t * hidden + 4 * vocab * hidden + 8 * t
        self.measure("memory_bound", "embedding_bwd", f"t{t}_v{vocab}_h{hidden}", nbytes,
                     lambda i: torch.autograd.grad(out, (table,), dy, retain_graph=True), nbytes / 3e12,
                     dict(op="embedding_bwd", dtype="fp32", tokens=t, vocab=vocab, hidden=hidden, operand_sets=1,
                          impl="torch.autograd.grad of F.embedding over an fp32 table (dense gradient)",
                          bytes_formula="read dy, write the zeroed table and its rows"),
                     profile_label="embedding_bwd")

    def cross_entropy(self):
        configs = [(4096, 128256, "bf16")] if self.args.quick else (
            [(t, v, "bf16") for t in (1024, 4096, 8192) for v in (32000, 50304, 128256, 256000)]
            + [(4096, v, "fp32") for v in (32000, 50304, 128256, 256000)])
        for tokens, vocab, dtype in configs:
            if self.left() < 0:
                return
            try:
                torch_dtype = BF16 if dtype == "bf16" else torch.float32
                size = 2 if dtype == "bf16" else 4
                logits = torch.randn(tokens, vocab, device="cuda", dtype=torch_dtype)
                target = torch.randint(0, vocab, (tokens,), device="cuda")
                extras = {"op": "cross_entropy", "dtype": dtype, "tokens": tokens, "vocab": vocab,
                          "impl": "torch.nn.functional.cross_entropy (mean)", "operand_sets": 1}
                n = tokens * vocab
                self.measure("memory_bound", "cross_entropy_fwd", f"t{tokens}_v{vocab}_{dtype}", n * size,
                             lambda i: F.cross_entropy(logits, target), n * size / 3e12,
                             dict(extras, bytes_formula="read logits"), profile_label=f"cross_entropy_fwd_{dtype}")
                leaf = logits.detach().requires_grad_(True)
                loss = F.cross_entropy(leaf, target)
                self.measure("memory_bound", "cross_entropy_bwd", f"t{tokens}_v{vocab}_{dtype}", 2 * n * size,
                             lambda i: torch.autograd.grad(loss, (leaf,), retain_graph=True), 2 * n * size / 3e12,
                             dict(extras, bytes_formula="read saved log-probabilities, write dlogits"),
                             profile_label=f"cross_entropy_bwd_{dtype}")
                logits = leaf = loss = None  # free before the next, larger vocabulary
            except Exception as error:  # noqa: BLE001
                self.skip(f"cross_entropy {tokens}x{vocab} {dtype}", error)

    def adamw(self):
        sizes = [2**22] if self.args.quick else [2**22, 2**24, 2**26, 2**28, 2**30]
        for n in sizes:
            if self.left() < 0:
                return
            try:
                tensors = 16
                params = [torch.nn.Parameter(torch.randn(n // tensors, device="cuda")) for _ in range(tensors)]
                for p in params:
                    p.grad = torch.randn_like(p)
                opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
                opt.step()  # creates the moment buffers
                nbytes = 28 * n
                self.measure("adamw", "fused_fp32", f"p{n}", nbytes, lambda i: opt.step(), nbytes / 3e12,
                             {"op": "adamw", "impl": "torch.optim.AdamW(fused=True).step()", "params": n,
                              "tensors": tensors, "dtype": "fp32 params, grads and moments",
                              "bytes_formula": "read p, g, m, v; write p, m, v (28 B per parameter)"},
                             profile_label="adamw")
                opt = params = None
            except Exception as error:  # noqa: BLE001
                self.skip(f"adamw {n}", error)

    # ---- attention ----

    def attention(self):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                    "efficient": SDPBackend.EFFICIENT_ATTENTION}
        seqs = [4096] if self.args.quick else [1024, 2048, 4096, 8192, 16384, 32768]
        for head_dim in (128, 64):
            for kv_ratio in (1, 4):
                for causal in (True, False):
                    for name, backend in backends.items():
                        for seq in seqs:
                            if self.left() < 0:
                                return
                            batch = max(1, 16384 // seq)
                            heads = 32
                            kv_heads = heads // kv_ratio
                            label = f"sdpa_{name}_d{head_dim}_kv{kv_heads}_{'causal' if causal else 'full'}"
                            profiled = seq == 4096 and head_dim == 128 and causal  # kernel names: one per backend
                            try:
                                self.sdpa(name, backend, sdpa_kernel, batch, seq, heads, kv_heads, head_dim, causal,
                                          label if profiled else None)
                            except Exception as error:  # noqa: BLE001
                                self.skip(f"{label} s{seq}", error)

    def attention_steps(self):
        """cuDNN's SDPA (PyTorch's choice on Hopper) on the shapes of training steps on one GPU: a few sequences of
        16 or 32 heads, causal, d = 128 -- hundreds of CTAs rather than the thousands of `attention`'s shapes, where a
        kernel's fixed costs and its CTAs' prologues show."""
        from torch.nn.attention import SDPBackend, sdpa_kernel
        shapes = ([(2, 2048, 16, 16)] if self.args.quick else
                  [(1, 1024, 16, 16), (1, 2048, 16, 16), (1, 2048, 16, 4), (2, 2048, 16, 16), (2, 2048, 16, 4),
                   (4, 2048, 16, 16), (1, 4096, 16, 4), (2, 4096, 16, 16), (1, 4096, 32, 8), (2, 4096, 32, 32),
                   (1, 8192, 32, 8), (4, 2048, 32, 32)])
        for batch, seq, heads, kv_heads in shapes:
            if self.left() < 0:
                return
            try:
                self.sdpa("cudnn", SDPBackend.CUDNN_ATTENTION, sdpa_kernel, batch, seq, heads, kv_heads, 128, True,
                          None)
            except Exception as error:  # noqa: BLE001
                self.skip(f"sdpa_cudnn b{batch} s{seq} h{heads} kv{kv_heads}", error)

    def sdpa(self, name, backend, sdpa_kernel, batch, seq, heads, kv_heads, head_dim, causal, profile_label):
        q = torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=BF16)
        k = torch.randn(batch, kv_heads, seq, head_dim, device="cuda", dtype=BF16)
        v = torch.randn(batch, kv_heads, seq, head_dim, device="cuda", dtype=BF16)
        gqa = kv_heads != heads
        flops_fwd = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)
        extras = {"op": "sdpa", "backend": name, "batch": batch, "seq": seq, "heads": heads, "kv_heads": kv_heads,
                  "head_dim": head_dim, "causal": causal, "dtype": "bf16", "layout": "BHSD contiguous",
                  "impl": f"scaled_dot_product_attention(is_causal={causal}, enable_gqa={gqa}) under "
                          f"sdpa_kernel({backend})",
                  "flops_convention": "4 B Hq S^2 D forward, 2.5x that backward (recompute), halved when causal"}
        suffix = f"b{batch}_s{seq}_h{heads}_kv{kv_heads}_d{head_dim}_{'causal' if causal else 'full'}"
        with sdpa_kernel(backend):
            def fwd(i):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

            fwd(0)  # raises here when the backend refuses the configuration
            io_bytes = (q.numel() * 2 + k.numel() * 2) * 2
            self.measure("attention", f"{name}_fwd", suffix, io_bytes, fwd, flops_fwd / 4e14, extras,
                         profile_label=profile_label and profile_label + "_fwd", flops=flops_fwd)
            ql, kl, vl = (t.detach().requires_grad_(True) for t in (q, k, v))
            out = F.scaled_dot_product_attention(ql, kl, vl, is_causal=causal, enable_gqa=gqa)
            dout = torch.randn_like(out)
            bwd = lambda i: torch.autograd.grad(out, (ql, kl, vl), dout, retain_graph=True)  # noqa: E731
            self.measure("attention", f"{name}_bwd", suffix, 2 * io_bytes, bwd, 2.5 * flops_fwd / 3e14, extras,
                         profile_label=profile_label and profile_label + "_bwd", flops=2.5 * flops_fwd)

    def attention_unfused(self):
        seqs = [2048] if self.args.quick else [1024, 2048, 4096, 8192]
        for head_dim in (128, 64):
            for causal in (True, False):
                for seq in seqs:
                    if self.left() < 0:
                        return
                    try:
                        self.unfused(max(1, 8192 // seq), seq, 32, head_dim, causal)
                    except Exception as error:  # noqa: BLE001
                        self.skip(f"unfused s{seq} d{head_dim}", error)

    def unfused(self, batch, seq, heads, head_dim, causal):
        q = torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=BF16)
        k = torch.randn_like(q)
        v = torch.randn_like(q)
        mask = torch.ones(seq, seq, device="cuda", dtype=torch.bool).triu(1) if causal else None
        scale = head_dim ** -0.5

        def fwd(q, k, v):
            scores = torch.matmul(q, k.transpose(-2, -1)) * scale
            if mask is not None:
                scores = scores.masked_fill(mask, float("-inf"))
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(BF16)
            return torch.matmul(probs, v)

        flops_fwd = 4.0 * batch * heads * seq * seq * head_dim
        extras = {"op": "attention_unfused", "batch": batch, "seq": seq, "heads": heads, "kv_heads": heads,
                  "head_dim": head_dim, "causal": causal, "dtype": "bf16 (softmax in fp32)",
                  "impl": "matmul(q, k^T) * scale, masked_fill(causal), softmax(fp32).to(bf16), matmul(p, v)",
                  "flops_convention": "4 B H S^2 D forward (the mask saves nothing), 2x that backward"}
        suffix = f"b{batch}_s{seq}_h{heads}_d{head_dim}_{'causal' if causal else 'full'}"
        score_bytes = batch * heads * seq * seq * 2
        label = f"unfused_d{head_dim}_{'causal' if causal else 'full'}" if seq == 2048 else None
        self.measure("attention_unfused", "fwd", suffix, 4 * score_bytes, lambda i: fwd(q, k, v),
                     flops_fwd / 3e14 + 4 * score_bytes / 3e12,
                     dict(extras, bytes_formula="scores written and read, probabilities written and read (bf16)"),
                     profile_label=label and label + "_fwd", flops=flops_fwd)
        ql, kl, vl = (t.detach().requires_grad_(True) for t in (q, k, v))
        out = fwd(ql, kl, vl)
        dout = torch.randn_like(out)
        self.measure("attention_unfused", "bwd", suffix, 6 * score_bytes,
                     lambda i: torch.autograd.grad(out, (ql, kl, vl), dout, retain_graph=True),
                     2 * flops_fwd / 3e14 + 6 * score_bytes / 3e12,
                     dict(extras, bytes_formula="probabilities and dP read and written (bf16)"),
                     profile_label=label and label + "_bwd", flops=2 * flops_fwd)

    def skip(self, what, error):
        line = f"{what}: {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
        self.skipped.append(line)
        print(f"  skipped {line}", file=sys.stderr, flush=True)
        torch.cuda.synchronize()

    def run(self):
        # Fused attention first: of what the budget may cut, it is what nothing else measures.
        parts = [self.attention, self.row_ops, self.elementwise_ops, self.cross_entropy, self.adamw,
                 self.attention_unfused, self.autocast_ops, self.attention_steps]
        if self.args.only:
            parts = [getattr(self, name) for name in self.args.only.split(",")]
        for part in parts:
            part()
            torch.cuda.empty_cache()
        print(f"compute_kernels: {self.writer.records} records, {len(self.skipped)} skipped, "
              f"{time.time() - self.started:.0f} s", file=sys.stderr)
        self.writer.close()


def sdpa_flags():
    b = torch.backends.cuda
    return {"flash": b.flash_sdp_enabled(), "mem_efficient": b.mem_efficient_sdp_enabled(),
            "cudnn": b.cudnn_sdp_enabled(), "math": b.math_sdp_enabled()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="one size per op: a dry run")
    parser.add_argument("--budget-seconds", type=float, default=0, help="stop starting new records after this")
    parser.add_argument("--only", default="", help="comma-separated parts (default: all): attention, row_ops, "
                        "elementwise_ops, cross_entropy, adamw, attention_unfused, autocast_ops, attention_steps")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    Capture(args).run()


if __name__ == "__main__":
    main()
