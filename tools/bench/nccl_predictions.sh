#!/usr/bin/env bash
# snsim's predicted time of all_reduce, all_gather, reduce_scatter and all_to_all at 8 B, 1 MiB, 64 MiB and 4 GiB on
# 8 GPUs (one HGX H100), 16 GPUs (2 nodes) and 64 GPUs (8 nodes) on InfiniBand NDR, launched from a stream and
# replayed from a CUDA graph, with the algorithm each ran (NCCL's pick, models/nccl_tuning.hpp). Parameters: h100.
#
#   tools/bench/nccl_predictions.sh [SNSIM]        e.g. tools/bench/nccl_predictions.sh build/tools/snsim
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
snsim=${1:-$root/build/tools/snsim}
[[ -x $snsim ]] || { echo "$0: '$snsim' is not an executable (build first, or pass the path of snsim)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/snsim-nccl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

printf '%-6s %-6s %-15s %10s %14s %-22s\n' gpus launch op size time_us algorithm
for gpus in 8 16 64; do
  if [[ $gpus == 8 ]]; then topology='{type: hgx, gpu: h100, gpus: 8}'
  else topology="{type: superpod, node: hgx, gpu: h100, nodes: $((gpus / 8)), ib: ndr}"; fi
  for launch in stream graph; do
    cat >"$tmp/s.yaml" <<YAML
name: nccl-predictions
topology: $topology
models: {params: h100}
workloads:
  - {type: collective_sweep, ops: [all_reduce, all_gather, reduce_scatter, all_to_all], launch: $launch,
     sizes: {from: 8B, to: 4GiB, factor: 2}}
YAML
    "$snsim" run "$tmp/s.yaml" --quiet --out "$tmp/out" >/dev/null
    python3 - "$tmp/out/report.json" "$gpus" "$launch" <<'PY'
import json, sys
report, gpus, launch = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
wanted = {8: "8 B", 1 << 20: "1 MiB", 64 << 20: "64 MiB", 4 << 30: "4 GiB"}
for t in report["tables"]:
    if "nccl-tests" not in t["title"]:
        continue
    op = t["title"].split()[0]
    for r in t["rows"]:
        if r["size_B"] in wanted:
            print(f'{gpus:<6} {launch:<6} {op:<15} {wanted[r["size_B"]]:>10} {r["time_us"]:14.1f} {r["algorithm"]:<22}')
PY
  done
done
