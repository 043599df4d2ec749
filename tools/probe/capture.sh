#!/usr/bin/env bash
# One whole capture on a GPU machine: build, then each named step, every probe run bounded by `timeout`.
# Traces, the log and a timing line per step go to OUT_DIR; CAPTURES.md records what produced what.
#
#   usage: tools/probe/capture.sh OUT_DIR STEP...
#   steps: headers        NVSHMEM's include/ (to compile-check on a machine without NVSHMEM)  } both land in
#          quick          a --quick dry run of every built family, one trace each            } OUT_DIR/extras.tar.gz
#          copy | latency-jitter | launch-1gpu | collective | nvshmem | nvshmem-bidir | uvm | step
#                         a full capture into OUT_DIR/<prefix>-<step>.jsonl (PREFIX, default h200x2;
#                         launch-1gpu runs with CUDA_VISIBLE_DEVICES=0 and is named h200x1-launch.jsonl)
#          collective-proto
#                         the collective family three more times with NCCL_PROTO forced to LL, LL128 and
#                         Simple, tarred into OUT_DIR/<prefix>-collective-proto.tar.gz (one file comes back)
#          compute        the 1-GPU compute capture (GPU 0): the probe's compute family, then the PyTorch part
#                         (torch/compute_kernels.py, torch/train_steps.py), an nvidia-smi log alongside; files
#                         h200x1-compute.jsonl, h200x1-compute-torch.jsonl, h200x1-compute-steps.jsonl,
#                         h200x1-compute-steps-kernels.json, h200x1-compute-smi.csv (PREFIX1, default h200x1).
#                         COMPUTE_BUDGET (default 480) seconds in all: 45 % to the probe, 33 % and 22 % to the two
#                         scripts, each cut to what is left
#          x8             the 8-GPU capture (PREFIX default h200x8), made to fit one 10-minute device call:
#                         eleven probe runs in priority order, each under its own timeout and all within BUDGET
#                         seconds (default 540) from the script's start (a run that would not fit is cut short or
#                         skipped, and the log says so); their traces, `nvidia-smi topo -m` and
#                         `nvidia-smi nvlink --status` go into OUT_DIR/<prefix>-traces.tar.gz, rewritten after
#                         every run, so whatever finished comes back even if the call is cut. QUICK=1 adds
#                         --quick to every run (a dry run of the profile on any number of GPUs). README.md lists
#                         the runs and their expected times.
# Trace files are named relative to OUT_DIR, so their headers carry no directory of the capturing machine.
set -uo pipefail

out=${1:?usage: capture.sh OUT_DIR STEP...}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
prefix=${PREFIX:-h200x2}
budget=${BUDGET:-540}
script_started=$(date +%s)

# NVLink multicast stays off in every process (the probe forces this too).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
extra=$(mktemp -d)

# PROBE_BIN: a snsim-probe built elsewhere (for the same machine type); used when it runs, else the build.
probe="$repo/build-probe/snsim-probe"
if [[ -n "${PROBE_BIN:-}" ]] && "$PROBE_BIN" --version >/dev/null 2>&1; then
  probe=$(cd "$(dirname "$PROBE_BIN")" && pwd)/$(basename "$PROBE_BIN")
  echo "capture: using the prebuilt $probe"
else
  "$here/build.sh" || exit 1
fi
cd "$out" || exit 1
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
if [[ -n "$site" ]]; then
  export LD_LIBRARY_PATH="$site/nvidia/nvshmem/lib:$site/nvidia/nccl/lib:${LD_LIBRARY_PATH:-}"
fi
"$probe" --version
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv || true
nvidia-smi topo -m || true

status=0
# run NAME SECONDS [VAR=VALUE...] -- PROBE-ARGS...
# SECONDS is cut to what is left of BUDGET (less 15 s for archiving); with under 20 s left the run is skipped.
run() {
  run_program "$probe" "$@"
}

# run_program PROGRAM NAME SECONDS [VAR=VALUE...] -- ARGS...: as run, for any program.
run_program() {
  local program=$1 name=$2 seconds=$3
  shift 3
  local left=$(( budget - ($(date +%s) - script_started) - 15 ))
  if (( left < 20 )); then
    echo "=== step $name: skipped, ${left}s of the ${budget}s budget left"
    status=1
    return
  fi
  (( seconds > left )) && seconds=$left
  local vars=()
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  local started=$(date +%s)
  echo "=== step $name: env ${vars[*]:-} $(basename "$program") $* (timeout ${seconds}s)"
  env "${vars[@]}" timeout --signal=TERM --kill-after=10 "$seconds" "$program" "$@"
  local rc=$?
  echo "=== step $name: exit $rc, wall $(( $(date +%s) - started )) s, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  [[ $rc == 0 ]] || status=1
}

for step in "$@"; do
  case $step in
    headers)
      if [[ -n "$site" && -d "$site/nvidia/nvshmem/include" ]]; then
        tar -C "$site/nvidia/nvshmem" -czf "$extra/nvshmem-include.tar.gz" include
      fi ;;
    quick)
      for family in $("$probe" --list | awk -F'[: ]' '/^[a-z]/ {print $1}'); do
        run "quick-$family" 120 -- --quick --family "$family" --out "quick-$family.jsonl"
        mv "quick-$family.jsonl" "$extra/"
      done ;;
    copy) run copy 300 -- --family copy --out "$prefix-copy.jsonl" ;;
    latency-jitter) run latency-jitter 180 -- --family latency,jitter --out "$prefix-latency-jitter.jsonl" ;;
    launch-1gpu) run launch-1gpu 120 CUDA_VISIBLE_DEVICES=0 -- --family launch --out "h200x1-launch.jsonl" ;;
    collective) run collective 240 -- --family collective --out "$prefix-collective.jsonl" ;;
    collective-proto)
      mkdir -p proto
      for proto in LL LL128 Simple; do
        name=$prefix-collective-proto-$(tr '[:upper:]' '[:lower:]' <<<"$proto").jsonl
        cd proto && run "collective-$proto" 240 NCCL_PROTO=$proto -- --family collective --out "$name"
        cd "$out" || exit 1
      done
      tar -czf "$prefix-collective-proto.tar.gz" -C proto . && rm -rf proto ;;
    nvshmem) run nvshmem 180 -- --family nvshmem --out "$prefix-nvshmem.jsonl" ;;
    nvshmem-bidir) run nvshmem-bidir 180 -- --family nvshmem-bidir --out "$prefix-nvshmem-bidir.jsonl" ;;
    uvm) run uvm 300 -- --family uvm --out "$prefix-uvm.jsonl" ;;
    step) run step 300 -- --family step --out "$prefix-step.jsonl" ;;
    compute)
      one=${PREFIX1:-h200x1}
      total=${COMPUTE_BUDGET:-480}
      nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
        --format=csv -lms 200 > "$one-compute-smi.csv" 2>&1 &
      smi=$!
      # Each part gets its share as a timeout and, a little less, as its own budget (so it ends with its file whole).
      probe_s=$(( total * 45 / 100 )) kernels_s=$(( total * 33 / 100 )) steps_s=$(( total * 22 / 100 ))
      run compute-probe "$probe_s" CUDA_VISIBLE_DEVICES=0 -- --family compute --budget-seconds $(( probe_s - 15 )) \
        --out "$one-compute.jsonl"
      run_program python3 compute-torch "$kernels_s" CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 -- \
        "$here/torch/compute_kernels.py" --budget-seconds $(( kernels_s - 25 )) --out "$one-compute-torch.jsonl"
      run_program python3 compute-steps "$steps_s" CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 -- \
        "$here/torch/train_steps.py" --budget-seconds $(( steps_s - 30 )) --out "$one-compute-steps.jsonl" \
        --kernels-out "$one-compute-steps-kernels.json"
      kill "$smi" 2>/dev/null ;;
    x8)
      # The 8-GPU profile (README.md, "8-GPU capture"): most wanted first, so a cut call keeps the new data.
      [[ -z ${PREFIX:-} ]] && prefix=h200x8
      quick=()
      [[ ${QUICK:-0} == 1 ]] && quick=(--quick)
      traces=$(mktemp -d)
      nvidia-smi topo -m > "$traces/$prefix-topo.txt" 2>&1 || true
      nvidia-smi nvlink --status > "$traces/$prefix-nvlink.txt" 2>&1 || true
      pairwise=ce_peer,ce_peer_bidir,ce_local,sm_push,sm_pull,sm_local,ce_sm_shared
      x8_run() {  # NAME SECONDS PROBE-ARGS... (the trace goes to the archive folder)
        local name=$1 seconds=$2
        shift 2
        cd "$traces" || exit 1
        run "$name" "$seconds" -- "${quick[@]}" "$@"
        cd "$out" || exit 1
        tar -C "$traces" -czf "$out/$prefix-traces.tar.gz" .
      }
      x8_run copy-concurrent 90 --family copy --tests ce_concurrent,sm_concurrent --out "$prefix-copy-concurrent.jsonl"
      x8_run collective-r8 90 --family collective --ranks 8 --out "$prefix-collective-r8.jsonl"
      x8_run nvshmem 150 --family nvshmem --out "$prefix-nvshmem.jsonl"
      x8_run uvm 90 --family uvm --uvm-max-bytes 1G --out "$prefix-uvm.jsonl"
      x8_run collective-r4 60 --family collective --ranks 4 --out "$prefix-collective-r4.jsonl"
      x8_run collective-r2 60 --family collective --ranks 2 --out "$prefix-collective-r2.jsonl"
      x8_run copy-star 200 --family copy --pairs star --tests "$pairwise" --out "$prefix-copy.jsonl"
      x8_run latency-jitter 100 --family latency,jitter --pairs from0 --out "$prefix-latency-jitter.jsonl"
      x8_run copy-allpairs 90 --family copy --tests ce_peer,ce_peer_bidir,sm_push,sm_pull --size-step 4 \
        --max-bytes 256M --out "$prefix-copy-allpairs.jsonl"
      x8_run launch 30 --family launch --out "$prefix-launch.jsonl"
      x8_run step 90 --family step --out "$prefix-step.jsonl"
      rm -rf "$traces" ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
# At most 8 files come back from a device run: the extras travel as one archive.
if [[ -n "$(ls -A "$extra")" ]]; then tar -C "$extra" -czf "$out/extras.tar.gz" .; fi
exit $status
