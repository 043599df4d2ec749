#!/usr/bin/env bash
# Times whole `snsim run` invocations, one process each (SimGrid 3.32 runs one simulation per process, so Google
# Benchmark covers only in-process work; see docs/design.md#engine-facts).
#
#   tools/bench/bench_runs.sh [-n REPS] [SNSIM]        e.g. tools/bench/bench_runs.sh build/tools/snsim
#
# Runs every scenario in workloads/examples/ and a few generated ones REPS times (default 5) and prints one row per
# scenario: GPUs, ops executed, median wall time of the process, median in-process wall time (run.json: measured
# before the --out files are written, so it leaves out JSON/CSV output, which dominates large runs), peak RSS
# (the largest over the repetitions, from /usr/bin/time -f %M, else run.json's peak_memory_MiB) and the simulated
# time (report.json). A run that fails stops the script with its stderr.
set -euo pipefail

usage() {
  echo "usage: $0 [-n REPS] [SNSIM]   (SNSIM defaults to build/tools/snsim)" >&2
  exit 2
}

reps=5
while getopts "n:h" opt; do
  case $opt in
    n) reps=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -le 1 ]] || usage
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "$0: -n wants a positive integer, got '$reps'" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
snsim=${1:-$root/build/tools/snsim}
[[ -x $snsim ]] || { echo "$0: '$snsim' is not an executable (build first, or pass the path of snsim)" >&2; exit 2; }
snsim=$(cd "$(dirname "$snsim")" && pwd)/$(basename "$snsim")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/snsim-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

gnu_time=
if [[ -x /usr/bin/time ]] && /usr/bin/time -f %M -o "$tmp/probe" true 2>/dev/null; then gnu_time=/usr/bin/time; fi

# ---- generated scenarios -------------------------------------------------------------------------------------------
mkdir -p "$tmp/scenarios"
cat >"$tmp/scenarios/gen_hgx8_all_reduce_sweep.yaml" <<'EOF'
name: hgx8-all-reduce-sweep
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - {type: collective_sweep, ops: all_reduce, sizes: {from: 8B, to: 1GiB, factor: 2}}
EOF
cat >"$tmp/scenarios/gen_hgx8_all_reduce_1GiB.yaml" <<'EOF'
name: hgx8-all-reduce-1GiB
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - type: program
    ops: [{collective: {op: all_reduce, bytes: 1GiB}}]
EOF
cat >"$tmp/scenarios/gen_hgx8_p2p_all_pairs.yaml" <<'EOF'
name: hgx8-p2p-all-pairs
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - {type: p2p_sweep, pairs: all, engine: both, sizes: {from: 4B, to: 1GiB, factor: 4}}
EOF
cat >"$tmp/scenarios/gen_hgx8_step_x1000.yaml" <<'EOF'
name: hgx8-step-x1000
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - type: program
    ops:
      - repeat: 1000
        ops:
          - compute: {flops: 2.2TFLOP, bytes: 512MiB}
          - copy: {to: next, bytes: 64MiB, engine: sm}
          - collective: {op: all_reduce, bytes: 256MiB}
EOF
cat >"$tmp/scenarios/gen_hgx8_copies_x20000.yaml" <<'EOF'
name: hgx8-copies-x20000
topology: {type: hgx, gpu: h200, gpus: 8}
workloads:
  - type: program
    ops:
      - repeat: 20000
        ops: [{copy: {to: next, bytes: 1MiB}}]
EOF
cat >"$tmp/scenarios/gen_pcie8_all_to_all_sweep.yaml" <<'EOF'
name: pcie8-all-to-all-sweep
topology: {type: pcie, gpu: h200, gpus: 8}
workloads:
  - {type: collective_sweep, ops: all_to_all, sizes: {from: 8B, to: 1GiB, factor: 2}}
EOF

# ---- helpers -------------------------------------------------------------------------------------------------------
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
max() { sort -g | tail -n 1; }
# The value of the first "key": value line of a pretty-printed JSON file (strings unquoted).
json_value() { sed -n "s/^ *\"$1\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2" | head -n 1; }

# One row: scenario GPUs ops wall_s inproc_s rss_MiB sim_time_s. Leaves $out at the last run's output directory.
out=
bench() {
  local file=$1 name walls=() inprocs=() rsss=() i start end
  name=$(basename "$file" .yaml)
  for ((i = 0; i < reps; i++)); do
    out=$tmp/out/$name.$i
    mkdir -p "$out"
    start=$(date +%s%N)
    # Exit 4 is a simulated failure of the system (a lost GPU): its run is a result, timed like any other.
    rc=0
    if [[ -n $gnu_time ]]; then
      "$gnu_time" -f %M -o "$out/rss_kib" "$snsim" run "$file" --quiet --out "$out" 2>"$out/stderr" || rc=$?
    else
      "$snsim" run "$file" --quiet --out "$out" 2>"$out/stderr" || rc=$?
    fi
    [[ $rc -eq 0 || $rc -eq 4 ]] || { echo "$0: snsim run $file failed (exit $rc):" >&2; cat "$out/stderr" >&2; exit 1; }
    end=$(date +%s%N)
    walls+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')")
    inprocs+=("$(json_value wall_time_s "$out/run.json")")
    if [[ -n $gnu_time ]]; then
      rsss+=("$(awk '/^[0-9]+$/ { v = $1 } END { printf "%.1f", v / 1024 }' "$out/rss_kib")")
    else
      rsss+=("$(json_value peak_memory_MiB "$out/run.json")")
    fi
  done
  local report=$tmp/out/$name.0/report.json gpus ops sim
  gpus=$(json_value gpus "$report")
  ops=$(grep -c '"kind":' "$report" || true)
  sim=$(json_value simulated_time_s "$report")
  printf '%-34s %4s %7s %10.3f %10.3f %9.1f %14.6g\n' "$name" "${gpus:-?}" "$ops" \
    "$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${inprocs[@]}" | median)" \
    "$(printf '%s\n' "${rsss[@]}" | max)" "$sim"
}

# ---- run -----------------------------------------------------------------------------------------------------------
echo "# snsim run, one process per run, median of $reps: $snsim"
echo "# $(uname -srm), $(nproc) CPUs; peak RSS from ${gnu_time:-run.json} (largest of the runs)"
printf '%-34s %4s %7s %10s %10s %9s %14s\n' "# scenario" GPUs ops wall_s inproc_s rss_MiB sim_time_s
shopt -s nullglob
for f in "$root"/workloads/examples/*.yaml "$tmp"/scenarios/*.yaml; do bench "$f"; done
echo "# snsim $(json_value snsim_version "$out/run.json"), SimGrid $(json_value simgrid_version "$out/run.json")"
