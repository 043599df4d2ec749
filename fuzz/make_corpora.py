#!/usr/bin/env python3
"""Builds the seed corpus and dictionary of every fuzz target from files in this repository (docs/hardening.md).

    python3 fuzz/make_corpora.py OUT_DIR      # writes OUT_DIR/<target>/* and OUT_DIR/<target>.dict

Seeds come from the scenario examples, the parameter files, the committed traces (cut to a few records each, so
that libFuzzer mutates small inputs), the importers' sample files, the `nvidia-smi topo -m` matrices in trace headers
and topology tests, the replay's captured traces (a few launches of one step each, a Chakra prefix) with small
Kineto and Chakra traces written here, and every regression input under fuzz/regressions/<target>/. Nothing comes
from elsewhere.
"""
import codecs
import gzip
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["scenario", "params", "trace", "nccl_tests", "nvbandwidth", "p2p_bandwidth_latency", "nvshmem_perftest",
           "nvidia_smi", "replay"]
SAMPLES = ROOT / "validation/importers/samples"


def shrunk_trace(path, records=4):
    """The header, the first `records` records and a completion line that counts them."""
    lines = path.read_text().splitlines()
    body = [line for line in lines[1:] if '"complete"' not in line][:records]
    return "\n".join([lines[0], *body, json.dumps({"complete": True, "records": len(body)})]) + "\n"


def shrunk_kineto(path, launches=6):
    """A Kineto trace cut to its first profiler step's first `launches` launches (with their GPU ops, the operators
    with shapes that launched them and the step's first record_param_comms), so that libFuzzer mutates small inputs."""
    trace = json.loads(gzip.open(path).read())
    events = trace.pop("traceEvents")
    step = min((e for e in events if e.get("cat") == "user_annotation"
                and e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])
    inside = [e for e in events if e.get("ph") == "X" and step["ts"] <= e.get("ts", -1) <= step["ts"] + step["dur"]]
    gpu = {e["args"]["correlation"]: e for e in events
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "correlation" in e.get("args", {})}
    calls = [e for e in inside if e.get("cat") == "cuda_runtime" and e.get("args", {}).get("correlation") in gpu]
    kept = calls[:launches]
    kept += [gpu[c["args"]["correlation"]] for c in kept]
    ids = {e["args"].get("External id") for e in kept if e.get("cat") == "kernel"}
    kept += [e for e in inside if e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {})
             and e["args"].get("External id") in ids]
    kept += [e for e in inside if e.get("name") == "record_param_comms"][:1]
    end = max(e["ts"] + e.get("dur", 0) for e in kept)
    kept.append(dict(step, dur=end - step["ts"]))
    trace["traceEvents"] = kept
    return json.dumps(trace, separators=(",", ":"))


def varint(v):
    out = b""
    while True:
        byte, v = v & 0x7F, v >> 7
        out += bytes([byte | (0x80 if v else 0)])
        if not v:
            return out


def pb_varint(field, v):
    return varint(field << 3) + varint(v)


def pb_bytes(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


def chakra_node(node_id, name, node_type, attrs, deps=(), duration=0):
    """A Chakra Node (workloads/replay/chakra_et.proto): id, name, type, data_deps, duration_micros and attributes
    (int64_val, or bool_val for is_cpu_op)."""
    body = pb_varint(1, node_id) + pb_bytes(2, name.encode()) + pb_varint(3, node_type)
    body += b"".join(pb_varint(5, d) for d in deps) + pb_varint(7, duration)
    for key, value in attrs.items():
        val = pb_varint(27, int(value)) if isinstance(value, bool) else pb_varint(9, value)
        body += pb_bytes(10, pb_bytes(1, key.encode()) + val)
    return body


def chakra_trace(nodes):
    messages = [pb_bytes(1, b"0.0.4")] + nodes
    return b"".join(varint(len(m)) + m for m in messages)


def replay_seeds():
    """Bytes: cut captured Kineto traces (one gzipped), a prefix of the captured Chakra trace, and small Kineto and
    Chakra traces with a collective, a send, a host copy and shapes."""
    folder = ROOT / "validation/traces/h200-replay"
    kineto = [shrunk_kineto(p).encode() for p in sorted(folder.glob("*.kineto.json.gz"))]
    found = kineto + [gzip.compress(kineto[0], mtime=0)]
    found.append((folder / "gpt-h2048-l2-b2-s2048-ddp.chakra.et").read_bytes()[:2048])
    gpu = {"is_cpu_op": False}
    found.append(chakra_trace([
        chakra_node(1, "gemm", 4, gpu, duration=100),
        chakra_node(2, "aten::add", 4, {"is_cpu_op": True}, [1], 5),
        chakra_node(3, "all_reduce", 7, {**gpu, "comm_type": 0, "comm_size": 1 << 20}, [1]),
        chakra_node(4, "load", 2, {"tensor_size": 4096}, [2]),
        chakra_node(5, "send", 5, {**gpu, "comm_src": 0, "comm_dst": 1, "comm_size": 4096, "comm_tag": 3}, [3]),
        chakra_node(6, "recv", 6, {**gpu, "comm_src": 1, "comm_dst": 0, "comm_size": 4096}, [4]),
    ]))
    send = {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "tid": 1, "ts": 10, "dur": 5,
            "args": {"Collective name": "send", "dtype": "Float", "In msg nelems": 1024, "Out msg nelems": 1024,
                     "Process Group Ranks": "[0, 1]", "Dst Rank": 1}}
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 11, "dur": 2,
              "args": {"correlation": 1}}
    kernel = {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
              "tid": 20, "ts": 15, "dur": 50, "args": {"correlation": 1, "stream": 20}}
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "tid": 1, "ts": 0, "dur": 100}
    header = {"deviceProperties": [{"name": "NVIDIA H200"}], "distributedInfo": {"rank": 0, "world_size": 1}}
    found.append(json.dumps({**header, "traceEvents": [send, launch, kernel, step]}).encode())
    return found


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
    # Not the steps of 128 GPUs and more: loading one builds every rank's program, seconds to minutes under ASan
    # (past the fuzzer's hang limit: the 8,192-GPU Llama step timed out as a seed), and they add scale, not syntax.
    at_scale = ("superpod4096", "gpt3_175b_", "llama405b_8192")
    for folder in ["workloads/examples", "workloads/uvm", "workloads/bench"]:
        s["scenario"] += [p.read_text() for p in sorted((ROOT / folder).glob("*.yaml"))
                          if not any(name in p.name for name in at_scale)]
    s["params"] += [p.read_text() for p in sorted((ROOT / "validation/params").glob("*.yaml"))]
    s["trace"] += [shrunk_trace(p) for p in sorted((ROOT / "validation/traces").rglob("*.jsonl"))]
    s["trace"].append((SAMPLES / "snsim_trace.jsonl").read_text())
    for target, pattern in [("nccl_tests", "nccl_tests*"), ("nvbandwidth", "nvbandwidth*"),
                            ("p2p_bandwidth_latency", "p2p_bandwidth_latency*"), ("nvshmem_perftest", "perftest*")]:
        s[target] += [p.read_text() for p in sorted(SAMPLES.glob(pattern))]
    s["nvidia_smi"] += topo_matrices()
    s["replay"] += replay_seeds()
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
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]{1,30}", text if isinstance(text, str) else
                                text.decode("utf-8", "ignore")))
    return "".join(f'"{w}"\n' for w in sorted(words)[:2000])


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build-asan/corpora")
    for target, texts in seeds().items():
        folder = out / target
        folder.mkdir(parents=True, exist_ok=True)
        data = [t if isinstance(t, bytes) else t.encode() for t in texts]
        regressions = ROOT / "fuzz/regressions" / target
        if regressions.is_dir():
            data += [p.read_bytes() for p in sorted(regressions.iterdir()) if p.is_file()]
        for d in data:  # content-named, like libFuzzer's own corpus files
            (folder / hashlib.sha1(d).hexdigest()).write_bytes(d)
        (out / f"{target}.dict").write_text(dictionary(target, texts))
        print(f"{target}: {len(data)} seeds")


if __name__ == "__main__":
    main()
