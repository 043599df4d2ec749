#!/usr/bin/env bash
# One GPU timed by both programs in one device call: snsim-probe's one-GPU copy, jitter and launch families (the
# probe's gate) and then xc's one-GPU suites and xc_torch.py (every other method), so that a difference between the
# two is a difference of method, not of machine. On an H200 it also runs the probe's fp16 and tf32 GEMM table.
# Carried binaries: build-probe/snsim-probe and build-crosscheck/xc (built on the development machine).
# Packs OUT/<gpu>-same-gpu.tar.gz (traces, nvidia-smi log and machine text). Usage: capture-same-gpu.sh OUT
set -uo pipefail
out=${1:?usage: capture-same-gpu.sh OUT}
root=$(cd "$(dirname "$0")/../.." && pwd)
budget=${BUDGET:-540}
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
step() { echo "=== $1: exit $2, wall $(( $(date +%s) - $3 )) s, $(left) s left"; }
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
export CUDA_VISIBLE_DEVICES=0
export XC_DRIVER_VERSION=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
export XC_TOPO=$(nvidia-smi topo -m 2>/dev/null)
site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null || true)
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
export LD_LIBRARY_PATH=$cuda_home/lib64:$site/nvidia/cublas/lib:${LD_LIBRARY_PATH:-}
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) gpu=h200x1 ;;
  *H100*) gpu=h100x1 ;;
  *) gpu=gpux1 ;;
esac
work=$(mktemp -d)
t=$work/traces
mkdir -p "$t"
(nvidia-smi; nvidia-smi -q -d POWER,CLOCK,PERFORMANCE) > "$t/$gpu-same-gpu-machine.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 100 > "$t/$gpu-same-gpu-smi.csv" 2>&1 &
smi=$!
pack() { tar czf "$out/$gpu-same-gpu.tar.gz" -C "$t" .; }
probe=$root/build-probe/snsim-probe
xc=$root/build-crosscheck/xc

s=$(date +%s)
timeout 120 "$probe" --family copy,jitter,launch --quiet --out "$t/$gpu-probe-copy-jitter-launch.jsonl"
step probe $? "$s"
pack

s=$(date +%s)
timeout $(( $(left) - 150 )) "$xc" --out "$t" --prefix "$gpu-xc" --budget $(( $(left) - 160 ))
step xc $? "$s"
pack

s=$(date +%s)
timeout $(( $(left) - 50 )) python3 "$root/tools/crosscheck/python/xc_torch.py" --out "$t" --prefix "$gpu-xc-torch" \
  --budget $(( $(left) - 60 ))
step xc_torch $? "$s"
pack

if [ "$gpu" = h200x1 ]; then
  s=$(date +%s)
  timeout $(( $(left) - 5 )) "$probe" --family compute --tests gemm --formats fp16,tf32 \
    --budget-seconds $(( $(left) - 15 )) --samples-cap 100 --quiet --out "$t/$gpu-compute-ft.jsonl"
  step probe-fp16-tf32 $? "$s"
fi
kill $smi 2> /dev/null
pack
ls -la "$t"
