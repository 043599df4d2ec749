#!/usr/bin/env bash
# A 1,024-node all-reduce sweep: 8,192 H100s in HGX nodes over InfiniBand NDR (rail-optimised), all_reduce from 8 B to
# 16 GiB (32 sizes), as one `snsim run`, with its wall time, CPU time and peak memory. Target (issue 18): under 30 s
# on 2 cores. Not part of CI: the figures depend on the machine (docs/performance.md has the last ones measured).
#
#   tools/bench/nccl_scale.sh [NODES] [SNSIM]        e.g. tools/bench/nccl_scale.sh 1024 build/tools/snsim
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
nodes=${1:-1024}
snsim=${2:-$root/build/tools/snsim}
[[ $nodes =~ ^[1-9][0-9]*$ ]] || { echo "$0: NODES wants a positive integer, got '$nodes'" >&2; exit 2; }
[[ -x $snsim ]] || { echo "$0: '$snsim' is not an executable (build first, or pass the path of snsim)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/snsim-nccl-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/s.yaml" <<YAML
name: nccl-scale
topology: {type: superpod, node: hgx, gpu: h100, nodes: $nodes, ib: ndr}
models: {params: h100}
workloads:
  - {type: collective_sweep, ops: all_reduce, sizes: {from: 8B, to: 16GiB, factor: 2}}
YAML
if [[ -x /usr/bin/time ]]; then
  /usr/bin/time -f "wall %e s, cpu %U s user + %S s sys, peak %M KiB" "$snsim" run "$tmp/s.yaml" --quiet --out "$tmp/out"
else
  time "$snsim" run "$tmp/s.yaml" --quiet --out "$tmp/out"
fi
python3 - "$tmp/out/report.json" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1]))["tables"]:
    if "nccl-tests" in t["title"]:
        print(t["title"])
        for r in t["rows"]:
            print(f'{r["size_B"]:>12} {r["algorithm"]:<24} {r["time_us"]:12.1f} us {r["busbw_GBps"]:8.1f} GB/s')
PY
