"""Writes snsim-trace/1 JSON Lines (validation/traces/README.md) from PyTorch measurements, and times CUDA work.

The same format and statistics as snsim-probe (tools/probe/src/common/record.cpp): order statistics over every
sample (percentiles interpolate linearly), at most `samples_cap` samples kept per record, every line flushed as
soon as it is written, and a completion line at the end. A script that dies part way leaves a valid, incomplete
trace (no completion line).
"""

import datetime
import json
import math
import os
import socket
import subprocess
import sys
import time

import torch

SCHEMA = "snsim-trace/1"
VERSION = "0.1.0"


def percentile_sorted(values, fraction):
    position = fraction * (len(values) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(values) - 1)
    return values[lower] + (values[upper] - values[lower]) * (position - lower)


def _number(value, digits):
    return float(f"{value:.{digits}g}")


def _nvidia_smi(query):
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


class Telemetry:
    """SM clock and power through NVML (pynvml), read on demand; `available` is False where NVML is missing."""

    def __init__(self):
        self.available = False
        try:
            import pynvml  # nvidia-ml-py
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.available = True
        except Exception as error:  # noqa: BLE001 - any failure means no telemetry, never a failed capture
            self.why = f"NVML unavailable: {error}"

    def read(self):
        if not self.available:
            return {}
        n = self._nvml
        try:
            return {"sm_clock_mhz": n.nvmlDeviceGetClockInfo(self._handle, n.NVML_CLOCK_SM),
                    "mem_clock_mhz": n.nvmlDeviceGetClockInfo(self._handle, n.NVML_CLOCK_MEM),
                    "power_w": n.nvmlDeviceGetPowerUsage(self._handle) * 1e-3,
                    "temp_c": n.nvmlDeviceGetTemperature(self._handle, n.NVML_TEMPERATURE_GPU)}
        except Exception:  # noqa: BLE001
            return {}

    def static(self):
        if not self.available:
            return {}
        n = self._nvml
        info = {}
        for key, call in (("power_limit_w", lambda: n.nvmlDeviceGetEnforcedPowerLimit(self._handle) * 1e-3),
                          ("max_sm_clock_mhz", lambda: n.nvmlDeviceGetMaxClockInfo(self._handle, n.NVML_CLOCK_SM)),
                          ("max_mem_clock_mhz", lambda: n.nvmlDeviceGetMaxClockInfo(self._handle, n.NVML_CLOCK_MEM))):
            try:
                info[key] = call()
            except Exception:  # noqa: BLE001
                pass
        return info


class TraceWriter:
    def __init__(self, path, tool, samples_cap=2000, header_extra=None):
        self.path = path
        self.samples_cap = samples_cap
        self.ids = set()
        self.records = 0
        self.telemetry = Telemetry()
        props = torch.cuda.get_device_properties(0)
        pci = _nvidia_smi("pci.bus_id")
        gpu = {"index": 0, "name": props.name, "pci": pci, "sms": props.multi_processor_count,
               "memory_bytes": props.total_memory, "compute_capability": f"{props.major}.{props.minor}"}
        if hasattr(props, "L2_cache_size"):
            gpu["l2_bytes"] = props.L2_cache_size
        env = {k: v for k, v in sorted(os.environ.items())
               if k.startswith(("NCCL_", "NVSHMEM_", "CUDA_", "TORCH_", "PYTORCH_")) and not v.startswith("/")
               and not k.endswith("_VERSION")}
        header = {
            "schema": SCHEMA, "probe": f"{VERSION} torch", "host": socket.gethostname(), "gpus": [gpu],
            "driver": _nvidia_smi("driver_version"), "cuda": torch.version.cuda or "", "nccl": None, "nvshmem": None,
            "topo": None, "env": env,
            "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tool": tool, "argv": sys.argv[1:], "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "python": sys.version.split()[0],
            "telemetry": self.telemetry.static() if self.telemetry.available else getattr(self.telemetry, "why", ""),
        }
        header.update(header_extra or {})
        self.file = open(path, "w", encoding="utf-8")
        self._write(header)

    def _write(self, obj):
        self.file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.file.flush()

    def emit(self, test, variant, nbytes, samples, suffix="", method="", **extras):
        """One record of family `compute`: `samples` in seconds, every one kept up to the cap."""
        record_id = f"compute/{test}/{variant}/0/{int(nbytes)}" + (f"/{suffix}" if suffix else "")
        if record_id in self.ids:
            raise ValueError(f"duplicate record id {record_id}")
        if not samples:
            raise ValueError(f"record {record_id} has no samples")
        self.ids.add(record_id)
        ordered = sorted(samples)
        record = {"id": record_id, "family": "compute", "test": test, "variant": variant, "ranks": [0],
                  "bytes": int(nbytes), "reps": len(samples), "unit": "s",
                  "median": _number(percentile_sorted(ordered, 0.5), 9),
                  "p01": _number(percentile_sorted(ordered, 0.01), 9),
                  "p99": _number(percentile_sorted(ordered, 0.99), 9),
                  "min": _number(ordered[0], 9), "max": _number(ordered[-1], 9), "method": method}
        record.update(extras)
        record["samples"] = [_number(s, 7) for s in samples[:self.samples_cap]]
        self._write(record)
        self.records += 1
        median = record["median"]
        rate = f"  {extras['tflops']:8.1f} TFLOP/s" if "tflops" in extras else (
            f"  {extras['gbps']:8.1f} GB/s" if "gbps" in extras else "")
        print(f"  {record_id:<90} median {median * 1e6:11.2f} us{rate}", file=sys.stderr, flush=True)
        return record

    def close(self):
        self._write({"complete": True, "records": self.records})
        self.file.close()


def sleep_cycles_per_second():
    """GPU clock cycles per second for torch.cuda._sleep: the SM clock's maximum (a longer hold is harmless)."""
    return 2.0e9


def time_calls(call, reps, warmup=2, queued=True, batch=48):
    """Per-call device times (s) of `call(i)`, back to back on the current stream, an event between consecutive
    calls. queued=True holds the stream with a spinning kernel (torch.cuda._sleep) while a batch is enqueued, so
    that the events bracket device time only, not the host's launch rate (as the probe's stream gate does)."""
    start = time.perf_counter()
    for i in range(warmup):
        call(i)
    # The host's time per call while the GPU catches up: how long the first batch's hold must last.
    host_per_call = (time.perf_counter() - start) / max(warmup, 1)
    torch.cuda.synchronize()
    samples = []
    index = warmup
    while len(samples) < reps:
        n = min(batch, reps - len(samples))
        events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        if queued:
            # Enough cycles for the host to enqueue the batch (its time per call measured on the batch before).
            hold = min(0.2, 1.5 * host_per_call * (n + 2) + 2e-4)
            torch.cuda._sleep(int(hold * sleep_cycles_per_second()))
        if queued and warmup:
            call(index)  # one call right behind the hold, so the first timed call follows a busy GPU
            index += 1
        start = time.perf_counter()
        events[0].record()
        for j in range(n):
            call(index)
            index += 1
            events[j + 1].record()
        host_per_call = (time.perf_counter() - start) / n
        torch.cuda.synchronize()
        samples.extend(events[j].elapsed_time(events[j + 1]) * 1e-3 for j in range(n))
    return samples


def reps_for(estimate_s, target_s=0.015, lo=5, hi=100):
    return int(max(lo, min(hi, round(target_s / max(estimate_s, 1e-7)))))


PROFILER_ACTIVITIES = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]


def cuda_kernels(prof):
    """(name, start_us, duration_us) of every CUDA kernel (and memcpy/memset) a torch.profiler session saw.
    GPU-side user annotations (record_function ranges such as "Optimizer.step#AdamW.step", which span kernels and
    are no kernels themselves) are left out; the first captures' lists still hold them."""
    kernels = []
    for event in prof.events():
        if getattr(event, "device_type", None) == torch.autograd.DeviceType.CUDA and not (
                getattr(event, "is_user_annotation", False) or event.name.startswith(("Optimizer.", "ProfilerStep"))):
            kernels.append((event.name, event.time_range.start, event.time_range.elapsed_us()))
    if not kernels:  # older event lists: the averages still name the device kernels
        for entry in prof.key_averages():
            if getattr(entry, "device_type", None) == torch.autograd.DeviceType.CUDA:
                total = getattr(entry, "device_time_total", None) or getattr(entry, "cuda_time_total", 0)
                for _ in range(entry.count):
                    kernels.append((entry.key, 0.0, total / max(entry.count, 1)))
    return kernels
