#!/usr/bin/env python3
"""Builds the seed corpus and dictionary of every fuzz target from files in this repository (docs/hardening.md).

    python3 fuzz/make_corpora.py OUT_DIR      # writes OUT_DIR/<target>/* and OUT_DIR/<target>.dict

Seeds come from the scenario examples, the parameter files, the committed traces (cut to a few records each, so
that libFuzzer mutates small inputs), the importers' sample files, the `nvidia-smi topo -m` matrices in trace headers
and topology tests, and every regression input under fuzz/regressions/<target>/. Nothing comes from elsewhere.
"""
import codecs
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["scenario", "params", "trace", "nccl_tests", "nvbandwidth", "p2p_bandwidth_latency", "nvshmem_perftest",
           "nvidia_smi"]
SAMPLES = ROOT / "validation/importers/samples"


def shrunk_trace(path, records=4):
    """The header, the first `records` records and a completion line that counts them."""
    lines = path.read_text().splitlines()
    body = [line for line in lines[1:] if '"complete"' not in line][:records]
    return "\n".join([lines[0], *body, json.dumps({"complete": True, "records": len(body)})]) + "\n"


def topo_matrices():
    """`nvidia-smi topo -m` texts: from trace headers, and the inline `text:` of the topology tests."""
    found = []
    for path in sorted((ROOT / "validation").rglob("*.jsonl")):
        with path.open() as f:
            header = json.loads(f.readline())
        if isinstance(header.get("topo"), str) and header["topo"]:
            found.append(header["topo"])
    for path in sorted(ROOT.glob("*/*_test.cpp")):
        for literal in re.findall(r'text: \\"(.*?)\\"', path.read_text()):
            # A YAML double-quoted scalar inside a C++ string literal: unescape both.
            found.append(codecs.decode(codecs.decode(literal, "unicode_escape"), "unicode_escape"))
    return found


def seeds():
    s = {t: [] for t in TARGETS}
    for folder in ["workloads/examples", "workloads/uvm", "workloads/bench"]:
        # Not the 4,096-GPU superpod: loading it takes seconds under ASan, near the fuzzer's hang limit, and it adds
        # scale, not syntax.
        s["scenario"] += [p.read_text() for p in sorted((ROOT / folder).glob("*.yaml")) if "superpod4096" not in p.name]
    s["params"] += [p.read_text() for p in sorted((ROOT / "validation/params").glob("*.yaml"))]
    s["trace"] += [shrunk_trace(p) for p in sorted((ROOT / "validation/traces").rglob("*.jsonl"))]
    s["trace"].append((SAMPLES / "snsim_trace.jsonl").read_text())
    for target, pattern in [("nccl_tests", "nccl_tests*"), ("nvbandwidth", "nvbandwidth*"),
                            ("p2p_bandwidth_latency", "p2p_bandwidth_latency*"), ("nvshmem_perftest", "perftest*")]:
        s[target] += [p.read_text() for p in sorted(SAMPLES.glob(pattern))]
    s["nvidia_smi"] += topo_matrices()
    # Shapes that mutation rarely reaches and that once crashed or exhausted memory: nesting past the cap
    # (sim/text.hpp) and aliases of aliases (sim/config.cpp), each just over its limit so that mutants fall on both
    # sides of it.
    header = (SAMPLES / "snsim_trace.jsonl").read_text().splitlines()[0]
    s["trace"].append(header + '\n{"id": "x", "family": ' + "[" * 600 + "]" * 600 + "}\n")
    s["nvbandwidth"].append('{"nvbandwidth": ' + "[" * 600 + "]" * 600 + "}")
    s["scenario"].append("name: " + "[" * 600 + "]" * 600 + "\ntopology: {type: hgx}\n")
    s["scenario"].append(alias_bomb(23))
    s["params"].append("".join(f"x{k}: &x{k} [*x{k - 1}, *x{k - 1}]\n" if k else "x0: &x0 [1, 1]\n" for k in range(24))
                       + "models: {copy: {ce: {efficiency: *x23}}}\n")
    return s


def alias_bomb(levels):
    """A program of 2^levels kernels written as aliases of aliases: a few lines that expand to millions of ops."""
    lines = ["name: bomb", "topology: {type: hgx, gpus: 2}", "x0: &x0 {compute: {time: 1us}}"]
    lines += [f"x{k}: &x{k} {{repeat: 1, ops: [*x{k - 1}, *x{k - 1}]}}" for k in range(1, levels + 1)]
    return "\n".join(lines + [f"workloads: [{{type: program, ops: [*x{levels}]}}]"]) + "\n"


def dictionary(target, texts):
    """Words worth splicing in: the keys every registry documents (scenario, params) or the seeds' own words."""
    words = set()
    if target in ("scenario", "params"):
        for folder in ["models", "topologies", "workloads", "sim"]:
            for path in (ROOT / folder).rglob("*.cpp"):
                words.update(re.findall(r'\{"([a-z][a-z0-9_]*)", "', path.read_text()))
    for text in texts:
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]{1,30}", text))
    return "".join(f'"{w}"\n' for w in sorted(words)[:2000])


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build-asan/corpora")
    for target, texts in seeds().items():
        folder = out / target
        folder.mkdir(parents=True, exist_ok=True)
        data = [t.encode() for t in texts]
        regressions = ROOT / "fuzz/regressions" / target
        if regressions.is_dir():
            data += [p.read_bytes() for p in sorted(regressions.iterdir()) if p.is_file()]
        for d in data:  # content-named, like libFuzzer's own corpus files
            (folder / hashlib.sha1(d).hexdigest()).write_bytes(d)
        (out / f"{target}.dict").write_text(dictionary(target, texts))
        print(f"{target}: {len(data)} seeds")


if __name__ == "__main__":
    main()
