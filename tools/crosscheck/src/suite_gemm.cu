// GEMM time against the operand data, family `step` (the probe's lone-GEMM records: test gemm, variant bf16).
//
// cuBLAS bf16 n x n x n (fp32 accumulation, bf16 C), n = 4096 and 8192, operands filled with `random` (uniform in
// [-1, 1)), `zeros`, `ones` or `small_int` (integers -3..3, exact in bf16). Methods: events_b2b (gemms_per_sample
// GEMMs back to back, per GEMM, after 0.3 s of the same GEMMs so that the power-capped clock has settled) and
// events_single (one GEMM on an idle stream). The data kinds run in two passes in opposite orders and each record
// holds both passes' samples, so a drift over the run does not favour one kind. Extras from NVML (loaded at run time;
// left out where it is missing): energy_per_gemm_j and avg_power_w over the timed samples, sm_clock_mhz read while
// the last sample's GEMMs run.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <map>

#include "suites.hpp"

namespace xc {

namespace {

// The few NVML entry points used, declared here so that no NVML header or library is needed to build.
struct Nvml {
  using Device = void*;
  int (*init)() = nullptr;
  int (*by_pci)(const char*, Device*) = nullptr;
  int (*energy)(Device, unsigned long long*) = nullptr;
  int (*clock)(Device, int, unsigned*) = nullptr;
  int (*power)(Device, unsigned*) = nullptr;
  Device device = nullptr;
  bool ok = false;

  explicit Nvml(int cuda_device) {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib) return;
    init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    by_pci = reinterpret_cast<int (*)(const char*, Device*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    energy = reinterpret_cast<int (*)(Device, unsigned long long*)>(dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    clock = reinterpret_cast<int (*)(Device, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    power = reinterpret_cast<int (*)(Device, unsigned*)>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    if (!init || !by_pci || !energy || !clock || !power || init() != 0) return;
    char pci[32];
    if (cudaDeviceGetPCIBusId(pci, sizeof pci, cuda_device) != cudaSuccess) return;
    ok = by_pci(pci, &device) == 0;
  }
  double energy_j() const {
    unsigned long long mj = 0;
    return ok && energy(device, &mj) == 0 ? mj * 1e-3 : -1;
  }
  double sm_mhz() const {
    unsigned mhz = 0;
    return ok && clock(device, 1 /* NVML_CLOCK_SM */, &mhz) == 0 ? static_cast<double>(mhz) : -1.0;
  }
};

__global__ void fill_bf16(__nv_bfloat16* p, unsigned long long n, int kind, unsigned seed) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n; i += 1ull * gridDim.x * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ (seed * 0x9E3779B9u) ^ static_cast<unsigned>(i >> 32);
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    float v = 0.f;
    if (kind == 0) v = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    if (kind == 2) v = 1.0f;
    if (kind == 3) v = static_cast<float>(static_cast<int>(h % 7u) - 3);
    p[i] = __float2bfloat16(v);
  }
}

const char* kKinds[] = {"random", "zeros", "ones", "small_int"};

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Failure(std::string(what) + " failed: cuBLAS status " + std::to_string(status));
}

}  // namespace

void run_gemm(Lane& lane, TraceSet& out, const Config& config, const Deadline& deadline) {
  const int device = lane.device();
  must(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s = lane.stream();
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");
  check(cublasSetStream(handle, s), "cublasSetStream");
  Nvml nvml(device);
  if (!nvml.ok) std::fprintf(stderr, "crosscheck: gemm: NVML not available: no energy or clock extras\n");

  for (int n : {4096, 8192}) {
    if (config.quick && n > 4096) break;
    const std::uint64_t elements = static_cast<std::uint64_t>(n) * n;
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
    must(cudaMalloc(&a, elements * 2), "cudaMalloc");
    must(cudaMalloc(&b, elements * 2), "cudaMalloc");
    must(cudaMalloc(&c, elements * 2), "cudaMalloc");
    const float alpha = 1.f, beta = 0.f;
    auto gemm = [&](cudaStream_t) {
      check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta,
                         c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    };
    const double flops = 2.0 * n * n * static_cast<double>(n);
    const int per_sample = n == 8192 ? 20 : 80;
    const int samples_per_pass = config.quick ? 3 : 15;
    struct Acc {
      std::vector<double> b2b, single;
      double energy_j = 0, busy_s = 0, mhz_sum = 0;
      int mhz_n = 0;
      std::vector<double> pass_medians;
    };
    std::map<int, Acc> acc;
    bool cut = false;
    for (int pass = 0; pass < 2 && !cut; ++pass) {
      for (int k = 0; k < 4; ++k) {
        if (deadline.passed()) {
          cut = true;
          break;
        }
        const int kind = pass == 0 ? k : 3 - k;
        if (kind == 1) {
          must(cudaMemsetAsync(a, 0, elements * 2, s), "cudaMemsetAsync");
          must(cudaMemsetAsync(b, 0, elements * 2, s), "cudaMemsetAsync");
        } else {
          fill_bf16<<<1024, 256, 0, s>>>(a, elements, kind, 1 + pass);
          fill_bf16<<<1024, 256, 0, s>>>(b, elements, kind, 7 + pass);
          launched("fill_bf16");
        }
        must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        const double warm_until = now_s() + (config.quick ? 0.05 : 0.3);
        while (now_s() < warm_until) {
          for (int i = 0; i < 10; ++i) gemm(s);
          must(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        }
        if (kind == 2) {  // ones: every element of C is n, exactly representable in bf16
          __nv_bfloat16 c0;
          must(cudaMemcpy(&c0, c, sizeof c0, cudaMemcpyDeviceToHost), "cudaMemcpy");
          if (__bfloat162float(c0) != static_cast<float>(n)) throw Failure("gemm: ones x ones gave a wrong result");
        }
        Acc& r = acc[kind];
        Op op;
        op.enqueue = gemm;
        op.warmup = 1;
        const double e0 = nvml.energy_j(), t0 = now_s();
        auto timed = lane.time(Method::events_b2b, Shape::back_to_back, op, samples_per_pass - 1, per_sample);
        // The last sample with the SM clock read while its GEMMs run.
        cudaEvent_t from, to;
        must(cudaEventCreate(&from), "cudaEventCreate");
        must(cudaEventCreate(&to), "cudaEventCreate");
        must(cudaEventRecord(from, s), "cudaEventRecord");
        for (int i = 0; i < per_sample; ++i) gemm(s);
        must(cudaEventRecord(to, s), "cudaEventRecord");
        const double mhz = nvml.sm_mhz();
        timed.push_back(Lane::elapsed(from, to) / per_sample);
        cudaEventDestroy(from);
        cudaEventDestroy(to);
        const double e1 = nvml.energy_j(), t1 = now_s();
        if (e0 >= 0 && e1 > e0) {
          r.energy_j += e1 - e0;
          r.busy_s += t1 - t0;
        }
        if (mhz > 0) {
          r.mhz_sum += mhz;
          ++r.mhz_n;
        }
        std::vector<double> sorted = timed;
        std::sort(sorted.begin(), sorted.end());
        r.pass_medians.push_back(quantile_sorted(sorted, 0.5));
        r.b2b.insert(r.b2b.end(), timed.begin(), timed.end());
        auto single = lane.time(Method::events_single, Shape::single, op, samples_per_pass, 1);
        r.single.insert(r.single.end(), single.begin(), single.end());
      }
    }
    const double energy_gemms = static_cast<double>(per_sample) * samples_per_pass;
    for (auto& [kind, r] : acc) {
      auto base = [&](int gemms) {
        Result res;
        res.family = "step";
        res.test = "gemm";
        res.variant = "bf16";
        res.ranks = {device};
        res.bytes = 3 * elements * 2;
        res.unit = "s";
        res.suffix = kKinds[kind];
        res.extras = {extra("m", n),
                      extra("n", n),
                      extra("k", n),
                      extra("flops", flops),
                      extra("gemms_per_sample", gemms),
                      extra("data", kKinds[kind])};
        return res;
      };
      Result b2b = base(per_sample);
      b2b.samples = r.b2b;
      std::vector<double> sorted = r.b2b;
      std::sort(sorted.begin(), sorted.end());
      b2b.extras.push_back(extra("tflops", flops / quantile_sorted(sorted, 0.5) * 1e-12));
      std::string medians = "[";
      for (std::size_t i = 0; i < r.pass_medians.size(); ++i)
        medians += (i ? ", " : "") + json_number(r.pass_medians[i]);
      b2b.extras.push_back(extra_raw("pass_medians", medians + "]"));
      if (r.busy_s > 0) {
        b2b.extras.push_back(extra("avg_power_w", r.energy_j / r.busy_s));
        b2b.extras.push_back(extra("energy_per_gemm_j", r.energy_j / (energy_gemms * r.pass_medians.size())));
      }
      if (r.mhz_n) b2b.extras.push_back(extra("sm_clock_mhz", r.mhz_sum / r.mhz_n));
      out.write("events_b2b", std::move(b2b));
      Result one = base(1);
      one.samples = r.single;
      out.write("events_single", std::move(one));
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    if (cut) break;
  }
  cublasDestroy(handle);
}

}  // namespace xc
