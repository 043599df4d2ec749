#include "xc.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

extern char** environ;

namespace xc {

std::string where(const std::source_location& at) {
  const char* file = std::strrchr(at.file_name(), '/');
  return std::string(file ? file + 1 : at.file_name()) + ":" + std::to_string(at.line());
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

namespace {
// Samples are written with fewer digits than the statistics; the reader accepts 1e-6 relative slack for that.
std::string sample_number(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.7g", value);
  return buffer;
}
}  // namespace

Extra extra(std::string key, double value) {
  return {std::move(key), json_number(value)};
}
Extra extra(std::string key, std::int64_t value) {
  return {std::move(key), std::to_string(value)};
}
Extra extra(std::string key, int value) {
  return {std::move(key), std::to_string(value)};
}
Extra extra(std::string key, std::uint64_t value) {
  return {std::move(key), std::to_string(value)};
}
Extra extra(std::string key, const char* value) {
  return {std::move(key), json_string(value)};
}
Extra extra(std::string key, const std::string& value) {
  return {std::move(key), json_string(value)};
}
Extra extra_raw(std::string key, std::string json) {
  return {std::move(key), std::move(json)};
}

TraceSet::TraceSet(std::string directory, std::string prefix, std::string header_json, std::size_t samples_cap)
    : directory_(std::move(directory)),
      prefix_(std::move(prefix)),
      header_(std::move(header_json)),
      cap_(samples_cap) {}

TraceSet::~TraceSet() {
  for (auto& [method, file] : files_)
    if (file.out) std::fclose(file.out);  // no completion line: a run that threw is read as incomplete
}

TraceSet::File& TraceSet::file_of(const std::string& method) {
  auto [it, inserted] = files_.try_emplace(method);
  if (inserted) {
    const std::string path = directory_ + "/" + prefix_ + "-" + method + ".jsonl";
    it->second.out = std::fopen(path.c_str(), "w");
    if (!it->second.out) throw Failure("cannot write " + path + ": " + std::strerror(errno));
    // The header is an object; the file's method goes in before its closing brace.
    std::string header = header_;
    header.insert(header.size() - 1, ", \"method\": " + json_string(method));
    std::fprintf(it->second.out, "%s\n", header.c_str());
    std::fflush(it->second.out);
  }
  return it->second;
}

void TraceSet::write(const std::string& method, Result r, std::size_t cap) {
  if (r.samples.empty()) {
    std::fprintf(stderr, "crosscheck: %s/%s/%s (%s): no samples, not written\n", r.family.c_str(), r.test.c_str(),
                 r.variant.c_str(), method.c_str());
    return;
  }
  File& file = file_of(method);
  std::vector<double> sorted = r.samples;
  std::sort(sorted.begin(), sorted.end());
  std::string ranks;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) ranks += (i ? "-" : "") + std::to_string(r.ranks[i]);
  std::string id = r.family + "/" + r.test + "/" + r.variant + "/" + ranks + "/" + std::to_string(r.bytes) + "/" +
                   method + (r.suffix.empty() ? "" : "-" + r.suffix);
  if (const int seen = ids_[method + "|" + id]++; seen > 0) id += "~" + std::to_string(seen + 1);

  // Kept samples: all of them up to the cap, else every k-th in capture order (the run's drift stays visible).
  const std::size_t keep_cap = cap ? cap : cap_;
  const std::size_t stride = r.samples.size() <= keep_cap ? 1 : (r.samples.size() + keep_cap - 1) / keep_cap;
  std::string samples;
  for (std::size_t i = 0; i < r.samples.size(); i += stride) {
    if (!samples.empty()) samples += ", ";
    samples += sample_number(std::clamp(r.samples[i], sorted.front(), sorted.back()));
  }
  std::string ranks_json = "[";
  for (std::size_t i = 0; i < r.ranks.size(); ++i) ranks_json += (i ? ", " : "") + std::to_string(r.ranks[i]);
  ranks_json += "]";

  std::string line = "{\"id\": " + json_string(id) + ", \"family\": " + json_string(r.family) +
                     ", \"test\": " + json_string(r.test) + ", \"variant\": " + json_string(r.variant) +
                     ", \"ranks\": " + ranks_json + ", \"bytes\": " + std::to_string(r.bytes) +
                     ", \"reps\": " + std::to_string(r.samples.size()) + ", \"unit\": " + json_string(r.unit) +
                     ", \"median\": " + json_number(quantile_sorted(sorted, 0.5)) +
                     ", \"p01\": " + json_number(quantile_sorted(sorted, 0.01)) +
                     ", \"p99\": " + json_number(quantile_sorted(sorted, 0.99)) +
                     ", \"min\": " + json_number(sorted.front()) + ", \"max\": " + json_number(sorted.back()) +
                     ", \"samples\": [" + samples + "], \"method\": " + json_string(method);
  if (stride > 1) line += ", \"samples_stride\": " + std::to_string(stride);
  if (r.samples.size() >= 1000) line += ", \"p999\": " + json_number(quantile_sorted(sorted, 0.999));
  for (const Extra& e : r.extras) line += ", " + json_string(e.key) + ": " + e.json;
  line += "}";
  std::fprintf(file.out, "%s\n", line.c_str());
  std::fflush(file.out);
  ++file.records;
}

void TraceSet::fail(const std::string& method, const std::string& family, const std::string& error) {
  File& file = file_of(method);
  std::fprintf(file.out, "{\"incomplete\": true, \"family\": %s, \"error\": %s, \"records\": %zu}\n",
               json_string(family).c_str(), json_string(error).c_str(), file.records);
  std::fflush(file.out);
  file.failed = true;
}

void TraceSet::close() {
  for (auto& [method, file] : files_) {
    if (!file.out) continue;
    if (!file.failed) std::fprintf(file.out, "{\"complete\": true, \"records\": %zu}\n", file.records);
    std::fclose(file.out);
    file.out = nullptr;
  }
}

std::size_t TraceSet::records() const {
  std::size_t n = 0;
  for (const auto& [method, file] : files_) n += file.records;
  return n;
}

namespace {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

// Variables that change what a capture measures; paths are left out (they say where, not how).
bool recorded_variable(const std::string& name, const std::string& value) {
  // *_VERSION: labels of the image (NCCL_VERSION, CUDA_VERSION), not settings; the header has the versions in use.
  if (name.size() > 8 && name.compare(name.size() - 8, 8, "_VERSION") == 0) return false;
  for (const char* prefix : {"NCCL_", "NVSHMEM_", "CUDA_", "TORCH_SYMM_MEM_", "PYTORCH_"})
    if (name.rfind(prefix, 0) == 0) return value.find('/') == std::string::npos;
  return false;
}

}  // namespace

std::string header_json(const std::vector<std::string>& argv, const std::string& nccl, const std::string& nvshmem) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  int runtime = 0, driver = 0, count = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  std::string gpus = "[";
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    must(cudaGetDeviceProperties(&p, d), "cudaGetDeviceProperties");
    char pci[32];
    std::snprintf(pci, sizeof pci, "%08x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    gpus += std::string(d ? ", " : "") + "{\"index\": " + std::to_string(d) + ", \"name\": " + json_string(p.name) +
            ", \"pci\": " + json_string(pci) + ", \"sms\": " + std::to_string(p.multiProcessorCount) +
            ", \"memory_bytes\": " + std::to_string(p.totalGlobalMem) +
            ", \"l2_bytes\": " + std::to_string(p.l2CacheSize) + ", \"compute_capability\": \"" +
            std::to_string(p.major) + "." + std::to_string(p.minor) + "\"}";
  }
  gpus += "]";
  std::string env = "{";
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
    if (!recorded_variable(name, value)) continue;
    env += std::string(env.size() > 1 ? ", " : "") + json_string(name) + ": " + json_string(value);
  }
  env += "}";
  // Absolute paths (the program's, a temporary output folder) say where it ran, not what it measured: last part only.
  std::string args = "[";
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (!a.empty() && a[0] == '/') {
      while (a.size() > 1 && a.back() == '/') a.pop_back();
      a = a.substr(a.find_last_of('/') + 1);
    }
    args += (i ? ", " : "") + json_string(a);
  }
  args += "]";
  const char* driver_text = std::getenv("XC_DRIVER_VERSION");  // nvidia-smi's, passed in by the capture script
  const char* topo = std::getenv("XC_TOPO");
  return "{\"schema\": \"snsim-trace/1\", \"probe\": null, \"host\": " + json_string(host) + ", \"gpus\": " + gpus +
         ", \"driver\": " +
         (driver_text ? json_string(driver_text) : json_string("cuda-driver-api " + version_text(driver))) +
         ", \"cuda\": " + json_string(version_text(runtime)) +
         ", \"nccl\": " + (nccl.empty() ? std::string("null") : json_string(nccl)) +
         ", \"nvshmem\": " + (nvshmem.empty() ? std::string("null") : json_string(nvshmem)) +
         ", \"topo\": " + (topo ? json_string(topo) : std::string("null")) + ", \"env\": " + env +
         ", \"started\": " + json_string(iso_now()) +
         ", \"tool\": " + json_string(std::string("snsim-crosscheck ") + kVersion) + ", \"argv\": " + args + "}";
}

}  // namespace xc
