#!/usr/bin/env bash
# The two-GPU capture in one device call (nvidia-h200-x2): build xc and xc-pgas, then the peer suites, the NVSHMEM and
# NCCL part, and the PyTorch all_reduce, within BUDGET seconds (default 540). Packs OUT/h200x2-crosscheck.tar.gz.
# Usage: capture-2gpu.sh OUT
set -uo pipefail
out=${1:?usage: capture-2gpu.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
budget=${BUDGET:-540}
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
step() { echo "=== $1: exit $2, wall $(( $(date +%s) - $3 )) s, $(left) s left"; }
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
export XC_DRIVER_VERSION=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
export XC_TOPO=$(nvidia-smi topo -m 2>/dev/null)
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$cuda_home/lib64:$site/nvidia/cublas/lib:${LD_LIBRARY_PATH:-}
prefix=${PREFIX:-h200x2-xc}
# The traces are written outside OUT (a device call brings back at most 8 files): only the packs go there.
work=${WORK:-$(mktemp -d)}
traces=$work/traces
mkdir -p "$traces"
nvidia-smi > "$traces/nvidia-smi.txt" 2>&1
nvidia-smi topo -m > "$traces/topo.txt" 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,clocks_event_reasons.active --format=csv -lms 200 \
  > "$traces/smi.csv" 2>&1 &
smi=$!
pack() { tar czf "$out/h200x2-crosscheck.tar.gz" -C "$traces" . 2>/dev/null; }

t=$(date +%s)
JOBS=32 bash "$here/build.sh" > "$traces/build.log" 2>&1
step build $? "$t"
t=$(date +%s)
timeout $(( $(left) - 300 )) "$root/build-crosscheck/xc" --out "$traces" --prefix "$prefix" \
  --suites peer_copies,peer_uvm,peer_jitter --budget $(( $(left) - 310 )) ${XC_ARGS:-}
step xc-peer $? "$t"
pack
t=$(date +%s)
if [ -x "$root/build-crosscheck/xc-pgas" ]; then
  timeout $(( $(left) - 70 )) bash "$here/pgas.sh" 2 "$traces" --prefix "${prefix}-pgas" --budget $(( $(left) - 90 ))
  step xc-pgas $? "$t"
fi
pack
t=$(date +%s)
timeout $(( $(left) - 5 )) python3 "$here/python/xc_torch.py" --distributed --out "$traces" \
  --prefix "${prefix}-torch" --budget $(( $(left) - 20 ))
step xc_torch-distributed $? "$t"
kill $smi 2> /dev/null
pack
ls -la "$traces"
