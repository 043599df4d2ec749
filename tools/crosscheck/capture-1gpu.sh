#!/usr/bin/env bash
# The one-GPU capture in one device call: build xc (unless a working one is there), run its one-GPU suites, then
# python/xc_torch.py, then a dry run of the two-GPU parts on this GPU (peer suites GPU 0 -> GPU 0 and xc-pgas on one
# PE, --quick); everything within BUDGET seconds (default 470) of the start. Packs OUT/h200x1-crosscheck.tar.gz
# (traces, every jitter sample, the nvidia-smi log) and OUT/dryrun.tar.gz. Usage: capture-1gpu.sh OUT
set -uo pipefail
out=${1:?usage: capture-1gpu.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
budget=${BUDGET:-470}
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
step() { echo "=== $1: exit $2, wall $(( $(date +%s) - $3 )) s, $(left) s left"; }
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
export XC_DRIVER_VERSION=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
export XC_TOPO=$(nvidia-smi topo -m 2>/dev/null)
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$cuda_home/lib64:$site/nvidia/cublas/lib:${LD_LIBRARY_PATH:-}
prefix=${PREFIX:-h200x1-xc}
# The traces are written outside OUT (a device call brings back at most 8 files): only the packs go there.
work=${WORK:-$(mktemp -d)}
traces=$work/traces
dry=$work/dryrun
mkdir -p "$traces" "$dry"
nvidia-smi > "$traces/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 200 > "$traces/smi.csv" 2>&1 &
smi=$!
pack() {
  tar czf "$out/h200x1-crosscheck.tar.gz" -C "$traces" . 2>/dev/null
  tar czf "$out/dryrun.tar.gz" -C "$dry" . 2>/dev/null
}

t=$(date +%s)
xc=$root/build-crosscheck/xc
if ! "$xc" --list > /dev/null 2>&1; then
  echo "carried xc does not run here: building"
  JOBS=16 bash "$here/build.sh" > "$traces/build.log" 2>&1
fi
step build $? "$t"

t=$(date +%s)
timeout $(( $(left) - 160 )) "$xc" --out "$traces" --prefix "$prefix" --budget $(( $(left) - 170 )) ${XC_ARGS:-}
step xc $? "$t"
pack

t=$(date +%s)
timeout $(( $(left) - 95 )) python3 "$here/python/xc_torch.py" --out "$traces" --prefix "${prefix}-torch" \
  --budget $(( $(left) - 105 )) ${TORCH_ARGS:-}
step xc_torch $? "$t"
pack

# Dry runs of the two-GPU parts on this one GPU: code paths only, not data.
t=$(date +%s)
timeout $(( $(left) - 75 )) "$xc" --out "$dry" --prefix dry --suites peer_copies,peer_uvm,peer_jitter --quick \
  --allow-self-peer --max-bytes 16M --uvm-max-bytes 16M --budget 20
step dry-peer $? "$t"
t=$(date +%s)
PGAS_ONLY=1 JOBS=16 timeout $(( $(left) - 35 )) bash "$here/build.sh" > "$dry/build-pgas.log" 2>&1
step build-pgas $? "$t"
t=$(date +%s)
if [ -x "$root/build-crosscheck/xc-pgas" ]; then
  timeout $(( $(left) - 8 )) bash "$here/pgas.sh" 1 "$dry" --prefix dry-pgas --quick --budget 20
  step dry-pgas $? "$t"
fi
kill $smi 2> /dev/null
pack
ls -la "$traces" "$dry"
