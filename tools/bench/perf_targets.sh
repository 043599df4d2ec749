#!/usr/bin/env bash
# The simulator-performance targets of issues 6 and 21, each timed as one whole `snsim run` process (wall time, CPU time
# and peak RSS from GNU time), with PASS or MISS per target on wall time and memory (CPU time, user + system, shows
# what a run cost when other work shares the machine). Not part of CI: the figures depend on the machine (the targets
# are for a 2-core machine). Exit status 1 when a target is missed.
#
#   tools/bench/perf_targets.sh [SNSIM]        e.g. tools/bench/perf_targets.sh build/tools/snsim
#
# Scenarios: workloads/bench/*.yaml. superpod4096_dp_step.yaml is generated: `tools/bench/perf_targets.sh -g` writes
# it again.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

if [[ ${1:-} == -g ]]; then
  python3 - "$root/workloads/bench/superpod4096_dp_step.yaml" <<'PY'
import sys
nodes, per = 512, 8
out = ["# Benchmark (tools/bench/perf_targets.sh): one data-parallel step on a 4,096-GPU superpod (512 HGX H200 nodes,",
       "# InfiniBand NDR, rail-optimised) with hierarchical collectives: the backward compute, then a reduce-scatter of the",
       "# 1 GiB gradients inside each node (NVLink), a ring all-reduce of each GPU's 128 MiB shard across the 512 nodes on",
       "# its rail, and an all-gather inside each node. Target: <= 60 s wall time, <= 2 GiB peak memory.",
       "# Generated: python3 one-liner in tools/bench/perf_targets.sh (regenerate with its -g option).",
       "name: bench-superpod4096-dp-step",
       f"topology: {{type: superpod, node: hgx, nodes: {nodes}, ib: ndr}}",
       "workloads:", "  - type: program", "    ranks: all", "    ops:", "      - compute: {flops: 20TFLOP, bytes: 16GiB}"]
node = lambda n, op: f'      - {{ranks: "{n*per}-{n*per+per-1}", ops: [{{collective: {{op: {op}, bytes: 1GiB}}}}]}}'
out += [node(n, "reduce_scatter") for n in range(nodes)]
for r in range(per):
    ranks = ", ".join(str(n * per + r) for n in range(nodes))
    out.append(f"      - {{ranks: [{ranks}], ops: [{{collective: {{op: all_reduce, bytes: 128MiB, algorithm: ring}}}}]}}")
out += [node(n, "all_gather") for n in range(nodes)]
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
  exit 0
fi

snsim=${1:-$root/build/tools/snsim}
[[ -x $snsim ]] || { echo "$0: '$snsim' is not an executable (build first, or pass the path of snsim)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "$0: needs GNU time (/usr/bin/time)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/snsim-perf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# name | scenario | wall-time limit (s, or Nx:SCENARIO for N times that earlier target's wall time) |
# peak-memory limit (MiB, - = none). The training steps of issue 21 run folded (docs/folding.md), as by default.
targets=(
  "NVL72 MoE step (a2a dispatch+combine, jittered; DP all-reduce)|nvl72_moe_step.yaml|1|-"
  "8xH200 all-reduce 1 GiB|hgx8_all_reduce_1GiB.yaml|0.05|-"
  "NVL576 ring all-reduce 1 GiB (576 GPUs)|nvl576_ring_all_reduce_1GiB.yaml|5|-"
  "superpod 4,096 GPUs DP step (hierarchical)|superpod4096_dp_step.yaml|60|2048"
  "GPT-3 175B step, 128 H100 (TP4 PP8 DP4)|gpt3_175b_128h100.yaml|5|1024"
  "Llama 3.1 405B step, 8,192 H100 (TP8 CP2 PP8 VP8 DP64)|llama405b_8192h100.yaml|60|4096"
  "  the same, one GPU 5 % slow|llama405b_8192h100_slow_gpu.yaml|2x:llama405b_8192h100.yaml|4096"
  "GPT-3 175B step, 16,384 H100 (TP8 PP8 DP256)|gpt3_175b_16384h100.yaml|120|8192"
)
declare -A walls  # by scenario, for the relative limits

printf '%-62s %10s %8s %10s %10s %12s  %s\n' target "wall s" "cpu s" limit "peak MiB" "limit MiB" result
missed=0
for t in "${targets[@]}"; do
  IFS='|' read -r name scenario wall_limit mem_limit <<<"$t"
  if [[ $wall_limit == *x:* ]]; then
    base=${walls[${wall_limit#*x:}]:-}
    wall_limit=$([[ -n $base ]] && awk -v n="${wall_limit%%x:*}" -v b="$base" 'BEGIN { printf "%.2f", n * b }' || echo 0)
  fi
  # Exit 4 is a simulated failure of the system (a lost GPU): a result, measured like a completed run.
  rc=0
  /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" timeout "${PERF_TIMEOUT:-600}" "$snsim" run "$root/workloads/bench/$scenario" \
      >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [[ $rc -ne 0 && $rc -ne 4 ]]; then
    why="run failed: $(tail -1 "$tmp/err")"
    [[ $rc -eq 124 ]] && why="stopped after PERF_TIMEOUT=${PERF_TIMEOUT:-600} s"
    printf '%-62s %10s %8s %10s %10s %12s  %s\n' "$name" - - "$wall_limit" - "$mem_limit" "MISS ($why)"
    missed=1
    continue
  fi
  read -r wall user sys kib < <(tail -1 "$tmp/time")
  walls[$scenario]=$wall
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  mib=$(awk -v k="$kib" 'BEGIN { printf "%.0f", k / 1024 }')
  result=PASS
  awk -v w="$wall" -v l="$wall_limit" 'BEGIN { exit !(w > l) }' && result=MISS
  [[ $mem_limit != - ]] && awk -v m="$mib" -v l="$mem_limit" 'BEGIN { exit !(m > l) }' && result=MISS
  [[ $result == MISS ]] && missed=1
  printf '%-62s %10s %8s %10s %10s %12s  %s\n' "$name" "$wall" "$cpu" "$wall_limit" "$mib" "$mem_limit" "$result"
done
exit $missed
