// snsim-probe: captures CUDA / NCCL / NVSHMEM microbenchmark traces for snsim (JSON Lines, "snsim-trace/1").
//
// The parent process parses the command line, writes the trace header and owns the trace file; it never
// calls CUDA. Every family runs in forked ranks (see common/process.h) that stream their records back.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#ifdef PROBE_HAVE_NCCL
#include <nccl.h>
#endif

#include "common/check.h"
#include "common/cuda_util.h"
#include "common/json.h"
#include "common/options.h"
#include "common/process.h"
#include "families/families.h"

extern char** environ;

namespace probe {
#ifdef PROBE_HAVE_NVSHMEM
std::string nvshmem_version_string();
#endif

namespace {

constexpr const char* kProbeVersion = "0.1.0";
constexpr const char* kSchema = "snsim-trace/1";

// Exit codes follow snsim's command-line contract.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // a family failed: CUDA/NCCL/NVSHMEM error or wrong data
constexpr int kExitUsage = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: snsim-probe [--family LIST] [--out FILE] [options]\n"
               "  --family LIST      comma-separated families (default: all built ones), see --list\n"
               "  --out FILE         trace file to write (default snsim-trace.jsonl)\n"
               "  --list             list the families, their tests and variants, and exit\n"
               "  --quick            short dry run: few sizes (x16 steps, <= 16 MiB), few repetitions\n"
               "  --max-bytes N      cap every size sweep at N bytes (suffixes K, M, G: binary)\n"
               "  --uvm-max-bytes N  cap managed regions (default 4G; also capped at 1/8 of free GPU memory)\n"
               "  --ranks N          processes for the NCCL/NVSHMEM families (default: every visible GPU)\n"
               "  --pairs SPEC       GPU pairs of the pairwise copy/latency tests: all (default), star (GPU 0 with\n"
               "                     every GPU, both ways), from0 (GPU 0 to every GPU) or a list 0-1,2-5\n"
               "  --size-step N      factor between sweep sizes, a power of two (default 2; 16 with --quick)\n"
               "  --tests LIST       copy and compute families: run only these tests (comma-separated, see --list)\n"
               "  --budget-seconds N compute family: cut the GEMM table short so that the family ends within N s\n"
               "  --formats LIST     compute family: time only GEMMs of these formats (bf16,fp16,tf32,fp8_e4m3)\n"
               "  --samples-cap N    samples kept per record in the file (default 2000)\n"
               "  --keep-going       run the remaining families after one fails (the trace stays incomplete)\n"
               "  --quiet            no per-record summary on stderr\n"
               "  --version, --help\n"
               "NCCL_NVLS_ENABLE=0 and NVSHMEM_DISABLE_NVLS=1 are always forced: NVLink multicast stays off.\n");
}

std::uint64_t parse_bytes(const std::string& text) {
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || number < 0) throw UsageError("not a byte count: " + text);
  std::string suffix(end);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (suffix.empty() || suffix == "B")
    scale = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    scale = static_cast<double>(KiB);
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    scale = static_cast<double>(MiB);
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    scale = static_cast<double>(GiB);
  else
    throw UsageError("unknown size suffix in " + text);
  return static_cast<std::uint64_t>(number * scale);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) parts.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

struct Command {
  Options options;
  bool list = false;
  bool help = false;
  bool version = false;
  std::vector<std::string> argv;
};

Command parse_command_line(int argc, char** argv) {
  Command command;
  for (int i = 0; i < argc; ++i) command.argv.emplace_back(argv[i]);
  auto value_of = [&](int& i) -> std::string {
    if (i + 1 >= argc) throw UsageError(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--family" || arg == "--families") {
      for (const std::string& name : split_commas(value_of(i)))
        if (name == "all")
          for (const Family& family : all_families()) command.options.families.push_back(family.name);
        else
          command.options.families.push_back(name);
    } else if (arg == "--out") {
      command.options.out_path = value_of(i);
    } else if (arg == "--list") {
      command.list = true;
    } else if (arg == "--quick") {
      command.options.quick = true;
    } else if (arg == "--max-bytes") {
      command.options.max_bytes = parse_bytes(value_of(i));
    } else if (arg == "--uvm-max-bytes") {
      command.options.uvm_max_bytes = parse_bytes(value_of(i));
    } else if (arg == "--ranks") {
      command.options.ranks = std::atoi(value_of(i).c_str());
      if (command.options.ranks < 1) throw UsageError("--ranks needs a positive number");
    } else if (arg == "--pairs") {
      command.options.pairs = value_of(i);
      if (!valid_pairs_spec(command.options.pairs))
        throw UsageError("--pairs needs all, star, from0 or a list like 0-1,2-5 (source-destination, different GPUs)");
    } else if (arg == "--size-step") {
      const long long step = std::atoll(value_of(i).c_str());
      if (step < 2 || (step & (step - 1)) != 0) throw UsageError("--size-step needs a power of two >= 2");
      command.options.size_step = static_cast<std::uint64_t>(step);
    } else if (arg == "--tests") {
      command.options.tests = split_commas(value_of(i));
      if (command.options.tests.empty()) throw UsageError("--tests needs at least one test name");
      for (const std::string& test : command.options.tests) {
        bool known = false;
        for (const char* family : {"copy", "compute"})
          for (const std::string& t : find_family(family)->tests) known = known || t.rfind(test + "/", 0) == 0;
        if (!known)
          throw UsageError("--tests: neither the copy nor the compute family has a test " + test + " (see --list)");
      }
    } else if (arg == "--formats") {
      command.options.formats = split_commas(value_of(i));
      for (const std::string& format : command.options.formats)
        if (format != "bf16" && format != "fp16" && format != "tf32" && format != "fp8_e4m3")
          throw UsageError("--formats: unknown GEMM format " + format + " (bf16, fp16, tf32, fp8_e4m3)");
      if (command.options.formats.empty()) throw UsageError("--formats needs at least one format");
    } else if (arg == "--budget-seconds") {
      command.options.budget_seconds = std::atof(value_of(i).c_str());
      if (!(command.options.budget_seconds > 0)) throw UsageError("--budget-seconds needs a positive number");
    } else if (arg == "--samples-cap") {
      command.options.samples_cap = static_cast<std::size_t>(std::atoll(value_of(i).c_str()));
      if (command.options.samples_cap < 1) throw UsageError("--samples-cap needs a positive number");
    } else if (arg == "--keep-going") {
      command.options.keep_going = true;
    } else if (arg == "--quiet") {
      command.options.verbose = false;
    } else if (arg == "--help" || arg == "-h") {
      command.help = true;
    } else if (arg == "--version") {
      command.version = true;
    } else {
      throw UsageError("unknown argument: " + arg);
    }
  }
  if (command.options.families.empty())
    for (const Family& family : all_families()) command.options.families.push_back(family.name);
  for (const std::string& name : command.options.families) {
    if (find_family(name)) continue;
    if (name == "nvshmem" || name == "nvshmem-bidir")
      throw UsageError("the " + name + " family was not built (NVSHMEM not found at build time)");
    if (name == "collective") throw UsageError("the collective family was not built (NCCL not found at build time)");
    throw UsageError("unknown family: " + name + " (see --list)");
  }
  return command;
}

void list_families() {
  for (const Family& family : all_families()) {
    std::printf("%s%s: %s\n", family.name.c_str(), family.one_process_per_gpu ? " [one process per GPU]" : "",
                family.summary.c_str());
    for (const std::string& test : family.tests) std::printf("    %s\n", test.c_str());
  }
#ifndef PROBE_HAVE_NVSHMEM
  std::printf("(nvshmem: not built, NVSHMEM was not found at build time)\n");
#endif
#ifndef PROBE_HAVE_NCCL
  std::printf("(collective: not built, NCCL was not found at build time)\n");
#endif
}

// NVLink multicast (NVLS) can take a shared host's GPUs out of service: it stays off in every process,
// whatever the caller's environment says. Set before any rank is forked, so every rank inherits it.
void force_safe_environment() {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  // One host: NVSHMEM's unique-id bootstrap over loopback; a symmetric heap that fits the largest buffers.
  setenv("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo", 0);
  setenv("NVSHMEM_SYMMETRIC_SIZE", "2147483648", 0);
}

std::string run_text_command(const char* command) {
  std::string text;
  if (std::FILE* pipe = ::popen(command, "r")) {
    char buffer[4096];
    std::size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
    ::pclose(pipe);
  }
  return text;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

// nvidia-smi underlines the matrix heading with ANSI escapes even when writing to a pipe.
std::string strip_terminal_escapes(const std::string& text) {
  std::string plain;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;  // up to the final byte
      continue;
    }
    plain += text[i];
  }
  return plain;
}

std::string iso8601_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string version_text(int code) {  // CUDA's 1000*major + 10*minor
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

// What CUDA sees, asked from a forked process so that the parent stays free of CUDA.
struct Inventory {
  std::string gpus_json;  // [{"index", "name", "pci", ...}]
  std::string cuda_runtime, cuda_driver_api;
  int gpu_count = 0;
};

Inventory take_inventory(const Options& options) {
  std::vector<std::string> lines;
  std::string failure;
  const bool ok = run_ranks(
      1, options,
      [](RankContext& context) {
        const int count = visible_device_count();
        JsonWriter gpus;
        gpus.begin_array();
        for (int device = 0; device < count; ++device) {
          cudaDeviceProp properties{};
          CHECK_CUDA(cudaGetDeviceProperties(&properties, device));
          char pci[64] = {0};
          CHECK_CUDA(cudaDeviceGetPCIBusId(pci, sizeof pci, device));
          gpus.begin_object()
              .field("index", device)
              .field("name", properties.name)
              .field("pci", pci)
              .field("sms", properties.multiProcessorCount)
              .field("memory_bytes", static_cast<std::uint64_t>(properties.totalGlobalMem))
              .field("l2_bytes", static_cast<std::uint64_t>(properties.l2CacheSize))
              .field("compute_capability", std::to_string(properties.major) + "." + std::to_string(properties.minor))
              .end_object();
        }
        gpus.end_array();
        int runtime = 0, driver = 0;
        cudaRuntimeGetVersion(&runtime);
        cudaDriverGetVersion(&driver);
        context.send_line(std::to_string(count));
        context.send_line(version_text(runtime));
        context.send_line(driver ? version_text(driver) : "");
        context.send_line(gpus.str());
      },
      [&](const std::string& line) { lines.push_back(line); }, &failure);
  if (!ok || lines.size() != 4) throw ProbeError("could not query the GPUs: " + failure);
  Inventory inventory;
  inventory.gpu_count = std::atoi(lines[0].c_str());
  inventory.cuda_runtime = lines[1];
  inventory.cuda_driver_api = lines[2];
  inventory.gpus_json = lines[3];
  return inventory;
}

// Variables that change what is measured. Left out: path-like values (they say nothing about the GPUs) and
// the container image's *_VERSION labels (the header's own version fields say what actually ran).
bool is_recorded_variable(const std::string& name, const std::string& value) {
  if (!value.empty() && value[0] == '/') return false;
  if (name.size() > 8 && name.compare(name.size() - 8, 8, "_VERSION") == 0) return false;
  for (const char* prefix : {"NCCL_", "NVSHMEM_", "CUDA_", "TORCH_SYMM_MEM_"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

void write_environment(JsonWriter& json) {
  std::vector<std::pair<std::string, std::string>> variables;
  for (char** entry = environ; *entry; ++entry) {
    const std::string text(*entry);
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    std::string name = text.substr(0, equals), value = text.substr(equals + 1);
    if (is_recorded_variable(name, value)) variables.emplace_back(std::move(name), std::move(value));
  }
  std::sort(variables.begin(), variables.end());
  json.begin_object();
  for (const auto& [name, value] : variables) json.field(name, value);
  json.end_object();
}

// The UVM driver's tunables (fault batching, prefetch thresholds): they shape every uvm record.
void write_uvm_parameters(JsonWriter& json) {
  const std::string folder = "/sys/module/nvidia_uvm/parameters";
  std::vector<std::pair<std::string, std::string>> parameters;
  if (DIR* directory = ::opendir(folder.c_str())) {
    while (const dirent* entry = ::readdir(directory)) {
      if (entry->d_name[0] == '.') continue;
      if (std::FILE* file = std::fopen((folder + "/" + entry->d_name).c_str(), "r")) {
        char buffer[256] = {0};
        const std::size_t got = std::fread(buffer, 1, sizeof buffer - 1, file);
        std::fclose(file);
        parameters.emplace_back(entry->d_name, first_line(std::string(buffer, got)));
      }
    }
    ::closedir(directory);
  }
  std::sort(parameters.begin(), parameters.end());
  json.begin_object();
  for (const auto& [name, value] : parameters) json.field(name, value);
  json.end_object();
}

std::string nccl_version() {
#ifdef PROBE_HAVE_NCCL
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." + std::to_string(code % 100);
#else
  return "";
#endif
}

std::string header_line(const Command& command, const Inventory& inventory) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string driver =
      first_line(run_text_command("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null"));
  const std::string topo = strip_terminal_escapes(run_text_command("nvidia-smi topo -m 2>/dev/null"));
  JsonWriter json;
  json.begin_object().field("schema", kSchema).field("probe", kProbeVersion).field("host", host);
  json.key("gpus").raw(inventory.gpus_json);
  json.field("driver", driver.empty() ? inventory.cuda_driver_api : driver);
  json.field("cuda", inventory.cuda_runtime);
  json.field("cuda_driver_api", inventory.cuda_driver_api);
  const std::string nccl = nccl_version();
  if (nccl.empty())
    json.key("nccl").null();
  else
    json.field("nccl", nccl);
#ifdef PROBE_HAVE_NVSHMEM
  json.field("nvshmem", nvshmem_version_string());
#else
  json.key("nvshmem").null();
#endif
  json.field("topo", topo);
  json.key("env");
  write_environment(json);
  json.field("started", iso8601_now());
  // Extra fields (allowed by the format): how this capture was asked for.
  json.key("argv").begin_array();
  for (std::size_t i = 1; i < command.argv.size(); ++i) json.value(command.argv[i]);
  json.end_array();
  json.key("families").begin_array();
  for (const std::string& family : command.options.families) json.value(family);
  json.end_array();
  json.key("options")
      .begin_object()
      .field("quick", command.options.quick)
      .field("max_bytes", command.options.max_bytes)
      .field("uvm_max_bytes", command.options.uvm_max_bytes)
      .field("samples_cap", static_cast<std::uint64_t>(command.options.samples_cap))
      .field("ranks", command.options.ranks)
      .field("pairs", command.options.pairs)
      .field("size_step", command.options.size_step)
      .field("budget_seconds", command.options.budget_seconds)
      .key("tests")
      .begin_array();
  for (const std::string& test : command.options.tests) json.value(test);
  json.end_array().key("formats").begin_array();
  for (const std::string& format : command.options.formats) json.value(format);
  json.end_array().end_object();
  json.key("uvm_params");
  write_uvm_parameters(json);
  json.end_object();
  return json.str();
}

int capture(const Command& command) {
  const Options& options = command.options;
  const Inventory inventory = take_inventory(options);
  if (inventory.gpu_count == 0) {
    std::fprintf(stderr, "snsim-probe: no CUDA GPU is visible: nothing to measure\n");
    return kExitFailed;
  }
  std::FILE* trace = std::fopen(options.out_path.c_str(), "w");
  if (!trace) {
    std::fprintf(stderr, "snsim-probe: cannot write %s: %s\n", options.out_path.c_str(), std::strerror(errno));
    return kExitUsage;
  }
  auto write_line = [trace](const std::string& line) {
    std::fputs(line.c_str(), trace);
    std::fputc('\n', trace);
    std::fflush(trace);  // every line reaches the file as soon as it exists
  };
  write_line(header_line(command, inventory));

  std::uint64_t records = 0;
  bool all_ok = true;
  for (const std::string& name : options.families) {
    const Family& family = *find_family(name);
    if (inventory.gpu_count < family.min_gpus) {
      std::fprintf(stderr, "== %s: skipped (needs %d GPUs, %d visible)\n", name.c_str(), family.min_gpus,
                   inventory.gpu_count);
      continue;
    }
    int ranks = 1;
    if (family.one_process_per_gpu)
      ranks = options.ranks ? std::min(options.ranks, inventory.gpu_count) : inventory.gpu_count;
    std::fprintf(stderr, "== %s: %d process%s\n", name.c_str(), ranks, ranks == 1 ? "" : "es");
    const double started = host_seconds();
    std::uint64_t family_records = 0;
    std::string failure;
    const bool ok = run_ranks(
        ranks, options, [&family](RankContext& context) { family.run(context); },
        [&](const std::string& line) {
          write_line(line);
          ++records;
          ++family_records;
        },
        &failure);
    std::fprintf(stderr, "== %s: %s, %llu records in %.1f s\n", name.c_str(), ok ? "done" : "FAILED",
                 static_cast<unsigned long long>(family_records), host_seconds() - started);
    if (!ok) {
      std::fprintf(stderr, "snsim-probe: family %s failed: %s\n", name.c_str(), failure.c_str());
      write_line(failure_line(name, failure, records));  // the records so far stay valid; readers mark it incomplete
      all_ok = false;
      if (!options.keep_going) break;
    }
  }
  if (all_ok) {
    JsonWriter complete;
    complete.begin_object().field("complete", true).field("records", records).end_object();
    write_line(complete.str());
  } else {
    std::fprintf(stderr, "snsim-probe: %s is incomplete (a failure line, no completion line): %llu records kept\n",
                 options.out_path.c_str(), static_cast<unsigned long long>(records));
  }
  std::fclose(trace);
  return all_ok ? kExitOk : kExitFailed;
}

}  // namespace
}  // namespace probe

int main(int argc, char** argv) {
  using namespace probe;
  Command command;
  try {
    command = parse_command_line(argc, argv);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "snsim-probe: %s\n", error.what());
    print_usage(stderr);
    return kExitUsage;
  }
  if (command.help) {
    print_usage(stdout);
    return kExitOk;
  }
  if (command.version) {
    std::printf("snsim-probe %s (trace schema %s)\n", kProbeVersion, kSchema);
    return kExitOk;
  }
  if (command.list) {
    list_families();
    return kExitOk;
  }
  force_safe_environment();
  try {
    return capture(command);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "snsim-probe: %s\n", error.what());
    return kExitFailed;
  }
}
