#!/usr/bin/env python3
"""A profiled PyTorch training step's kernels beside snsim's prediction of the same step, kernel group by group.

    plot_step_kernels.py KERNELS.json --snsim build/tools/snsim [--out DIR] [--model NAME] [--quiet]

KERNELS.json is what tools/probe/torch/train_steps.py writes with --kernels-out (schema snsim-kernels/1): per
profiled step, every CUDA kernel's name, launches and total time. For each of its models this script writes the
training scenario of that step on one GPU of the file's kind (H200, or H100 with its parameter set; the same model keys as validation/twins/train_step_twin.cpp: autocast,
eager RoPE for the Llama style), runs `snsim run` on it, reads the report's "compute time per GPU and step by kernel"
table, and sets both side by side by group:

  gemm         cuBLAS / cuBLASLt GEMMs (nvjet, xmma, cutlass)       snsim: gemm
  attention    cuDNN / flash SDPA and its helper kernels              snsim: attention
  cast         dtype copies (autocast's casts of weights, norm        snsim: cast
               outputs, logits and their gradients)
  adamw        the fused AdamW update                                 snsim: adamw
  norm         layernorm / RMSNorm forward and backward               snsim: layernorm, rmsnorm
  activation   GeLU, SiLU and the gate's multiply                     snsim: activation
  residual     fp32 adds (residual stream, gradient accumulation)     snsim: residual, stream
  rotary       eager RoPE: neg, bf16 multiply and add, rotate_half's  snsim: rotary
               4-d concatenation, its backward's bf16 zero fills
               and strided copies
  split        vectorised concatenations (the backward of the fused   snsim: qkv_split, mlp_split
               QKV split and of the gate/up chunk)
  loss         log-softmax, NLL and fp32 fills (the NLL gradient's)   snsim: cross_entropy
  embedding    the gather and its backward (sort, segment sums)       snsim: embedding
  bias_grad    bias gradients (column sums)                           snsim: bias_grad
  memset       cuBLAS / cub workspace memsets                         snsim: none
  other        anything else

(SwiGLU's multiplies and RoPE's share PyTorch's kernels: the vectorised bf16 multiply is the MLP's, the unvectorised
ones are shared by the bytes each moves, as the probe's models launch them.) Prints a markdown table per model and writes
DIR/step-kernels-MODEL.png (measured and predicted ms per group) unless matplotlib is missing (exit 3).
Exit codes: 0 ok, 2 bad input, 3 matplotlib missing, 4 snsim failed.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from plot_common import draw_with_pyplot, fail, is_number, load_json, save

GROUPS = ["gemm", "attention", "cast", "adamw", "norm", "activation", "residual", "rotary", "split", "loss",
          "embedding", "bias_grad", "memset", "other"]

# (pattern on the kernel's name, group), first match wins.
MEASURED_RULES = [
    (r"^(nvjet_|sm90_xmma_gemm|cutlass|ampere_.*gemm|sm80_xmma_gemm)", "gemm"),
    (r"sdpa|flash|fmha|cudnn::fusion", "attention"),
    (r"FusedAdam|multi_tensor_apply_kernel", "adamw"),
    (r"layer_norm|GammaBeta|rms_norm|RMSNorm", "norm"),
    (r"Gelu|silu", "activation"),
    (r"SoftMax|nll_loss|cross_entropy", "loss"),
    (r"gather_kernel|sum_and_scatter|compute_grad_weight|radix_sort|unique_by_key|cub::detail::scan|"
     r"partial_segment|partials_per_segment|num_of_partial_segments|arange|embedding", "embedding"),
    (r"reduce_kernel<.*sum_functor", "bias_grad"),
    (r"FillFunctor<float>", "loss"),
    # Eager RoPE's kernels beside the element-wise ones below: rotate_half's cat over a 4-d view (unvectorised), and
    # its backward's zero fills and copies into strided halves.
    (r"CatArrayBatchedCopy<|FillFunctor<c10::BFloat16>|^void at::native::elementwise_kernel<128, 4, "
     r"at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda", "rotary"),
    (r"FillFunctor|^Memset", "memset"),
    (r"CatArrayBatchedCopy", "split"),
    (r"direct_copy_kernel|bfloat16_copy_kernel|copy_kernel", "cast"),
    (r"CUDAFunctor_add<float>", "residual"),
    (r"neg_kernel|MulFunctor|CUDAFunctor_add<c10::BFloat16>", "rotary"),
]

SNSIM_GROUPS = {"gemm": "gemm", "attention": "attention", "cast": "cast", "adamw": "adamw", "layernorm": "norm",
                "rmsnorm": "norm", "activation": "activation", "residual": "residual",
                "stream": "residual", "rotary": "rotary", "cross_entropy": "loss", "embedding": "embedding",
                "bias_grad": "bias_grad", "qkv_split": "split", "mlp_split": "split",
                "embedding_grad": "embedding"}

KERNEL_TABLE = "training: compute time per GPU and step by kernel"


def measured_group(name):
    if name.startswith(("Optimizer.", "ProfilerStep")):  # GPU-side annotations span kernels: no kernels themselves
        return None
    for pattern, group in MEASURED_RULES:
        if re.search(pattern, name):
            return group
    return "other"


def gate_share(entry):
    """The share of a Llama step's unvectorised bf16 multiplies that are its MLPs' rather than RoPE's, by the bytes
    each moves: per layer the gate's product and its backward's dy * up (3 T f elements each) against RoPE's x cos,
    rotate_half(x) sin and their two backward products on q and on k (2 T d (heads or KV heads) each, the cos and sin
    tables left out)."""
    tokens = entry["batch"] * entry["seq"]
    head = entry["hidden"] // entry["heads"]
    gate = 2 * 3 * tokens * entry["ffn"]
    rope = 4 * 2 * tokens * head * (entry["heads"] + entry["kv_heads"])
    return gate / (gate + rope)


def measured_groups(entry):
    """ms per group of one profiled step. A SwiGLU model's bf16 multiplies: the vectorised one (dy * silu(gate), both
    contiguous) is the MLP's; the unvectorised ones are shared between the MLP and RoPE by their bytes."""
    out = {g: 0.0 for g in GROUPS}
    for k in entry["kernels"]:
        group = measured_group(k["name"])
        if group is None:
            continue
        ms = k["total_s"] * 1e3
        if group == "rotary" and "MulFunctor" in k["name"] and entry.get("arch") == "llama":
            gate = 1.0 if k["name"].startswith("void at::native::vectorized_elementwise_kernel") else gate_share(entry)
            out["activation"] += ms * gate
            ms *= 1 - gate
        out[group] += ms
    return out


def check_entry(entry, path, i):
    for key in ("model", "arch", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "batch", "seq",
                "step_median_s", "kernels"):
        if key not in entry:
            fail(f"{path}: models[{i}] has no '{key}'")
    if entry["arch"] not in ("gpt", "llama"):
        fail(f"{path}: models[{i}]: arch '{entry['arch']}' is neither gpt nor llama")
    for k in entry["kernels"]:
        if not isinstance(k, dict) or not isinstance(k.get("name"), str) or not is_number(k.get("total_s")):
            fail(f"{path}: models[{i}]: a kernel without a name and a total_s")


def preset_of(gpu_name):
    """snsim's GPU preset and parameter set for the file's `gpu` (nvidia-smi's name)."""
    return "h100" if "H100" in gpu_name else "h200"


def scenario(entry, gpu):
    """The step on one GPU as the training workload runs it (the model keys of the train_step twin)."""
    llama = entry["arch"] == "llama"
    model = (f"layers: {entry['layers']}, hidden: {entry['hidden']}, heads: {entry['heads']}, "
             f"kv_heads: {entry['kv_heads']}, head_dim: {entry['hidden'] // entry['heads']}, "
             f"ffn_hidden: {entry['ffn']}, vocabulary: {entry['vocab']}, micro_batch: {entry['batch']}, "
             f"sequence: {entry['seq']}, dtype: bf16, attention: flash, autocast: true")
    if llama:
        model += ", mlp: swiglu, norm: rmsnorm, rotary: true, rope: eager, glu: eager"
    else:
        model += ", linear_bias: true"  # the probe's GPT blocks have biases on every Linear
    return (f"name: step-kernels\nseed: 1\ntopology: {{type: pcie, gpu: {gpu}, gpus: 1}}\nmodels: {{params: {gpu}}}\n"
            f"workloads:\n  - type: training\n    steps: 3\n    model: {{{model}}}\n")


def predicted_groups(snsim, entry, gpu, work):
    path = os.path.join(work, f"{entry['model']}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(scenario(entry, gpu))
    out = os.path.join(work, entry["model"])
    run = subprocess.run([snsim, "run", path, "--out", out], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        fail(f"snsim run {path} failed ({run.returncode}): {run.stderr.strip()}", code=4)
    report = load_json(os.path.join(out, "report.json"))
    groups = {g: 0.0 for g in GROUPS}
    step_ms = None
    for table in report.get("tables", []):
        if table["title"].startswith(KERNEL_TABLE):
            for row in table["rows"]:
                groups[SNSIM_GROUPS.get(row["kernel"], "other")] += row["time_ms"]
        if table["title"].startswith("training summary"):
            for row in table["rows"]:
                if row.get("metric") == "step_mean_ms":
                    step_ms = row["value"]
    return groups, step_ms


def markdown(entry, measured, predicted, step_ms):
    lines = [f"### {entry['model']}, micro batch {entry['batch']} x {entry['seq']} tokens",
             "", "| group | measured ms | snsim ms | error |", "|---|---:|---:|---:|"]
    for g in GROUPS:
        m, p = measured[g], predicted[g]
        if m == 0 and p == 0:
            continue
        error = f"{100 * (p - m) / m:+.1f} %" if m > 0 else "-"
        lines.append(f"| {g} | {m:.2f} | {p:.2f} | {error} |")
    m, p = sum(measured.values()), sum(predicted.values())
    lines.append(f"| **kernels** | **{m:.2f}** | **{p:.2f}** | **{100 * (p - m) / m:+.1f} %** |")
    if step_ms is not None:
        s = entry["step_median_s"] * 1e3
        lines.append(f"| step | {s:.2f} | {step_ms:.2f} | {100 * (step_ms - s) / s:+.1f} % |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", help="a snsim-kernels/1 file (train_steps.py --kernels-out)")
    parser.add_argument("--snsim", required=True, help="the snsim binary")
    parser.add_argument("--out", default=".", help="where the figures go")
    parser.add_argument("--model", default="", help="only this model entry")
    parser.add_argument("--no-plot", action="store_true", help="print the tables only")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    data = load_json(args.kernels)
    if not isinstance(data, dict) or data.get("schema") != "snsim-kernels/1" or not isinstance(data.get("models"), list):
        fail(f"{args.kernels}: not a snsim-kernels/1 file (expected an object with schema and models)")
    entries = [e for e in data["models"] if isinstance(e, dict) and (not args.model or e.get("model") == args.model)]
    if not entries:
        fail(f"{args.kernels}: no model entry" + (f" named '{args.model}'" if args.model else ""))
    for i, entry in enumerate(entries):
        check_entry(entry, args.kernels, i)
    results = []
    with tempfile.TemporaryDirectory() as work:
        for entry in entries:
            predicted, step_ms = predicted_groups(args.snsim, entry, preset_of(str(data.get("gpu", ""))), work)
            measured = measured_groups(entry)
            results.append((entry, measured, predicted))
            print(markdown(entry, measured, predicted, step_ms) + "\n")
    if args.no_plot:
        return
    os.makedirs(args.out, exist_ok=True)

    def draw(plt):
        for entry, measured, predicted in results:
            groups = [g for g in GROUPS if measured[g] > 0 or predicted[g] > 0]
            fig, ax = plt.subplots(figsize=(9, 4))
            x = range(len(groups))
            ax.bar([i - 0.2 for i in x], [measured[g] for g in groups], 0.4, label="measured (profiled PyTorch step)")
            ax.bar([i + 0.2 for i in x], [predicted[g] for g in groups], 0.4, label="snsim")
            ax.set_xticks(list(x), groups, rotation=30)
            ax.set_ylabel("ms per step")
            ax.set_title(f"{entry['model']} b{entry['batch']} s{entry['seq']} on one H200: kernel time by group")
            ax.legend()
            save(plt, fig, os.path.join(args.out, f"step-kernels-{entry['model']}.png"))

    draw_with_pyplot("plot_step_kernels.py", draw, args.out, args.quiet)


if __name__ == "__main__":
    main()
