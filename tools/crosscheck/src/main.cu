// snsim-crosscheck: captures copies, launches, host costs, managed memory, jitter and GEMMs on NVIDIA GPUs, each
// timed by several methods, as snsim-trace/1 files (one per method). See tools/crosscheck/README.md.
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "suites.hpp"

namespace {

using namespace xc;

constexpr const char* kUsage =
    "usage: xc --out DIR [--prefix NAME] [--suites LIST] [--budget S] [--quick] [--max-bytes N] [--uvm-max-bytes N]\n"
    "          [--size-step N] [--jitter-samples N] [--methods LIST] [--peer GPU] [--allow-self-peer]\n"
    "          [--samples-cap N] [--list]\n"
    "suites (default: the one-GPU ones): copies launch host uvm jitter gemm | peer_copies peer_uvm peer_jitter\n"
    "sizes take K, M, G suffixes (binary)\n";

std::uint64_t parse_bytes(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  std::uint64_t scale = 1;
  if (end && *end) {
    switch (*end) {
      case 'K':
      case 'k':
        scale = KiB;
        break;
      case 'M':
      case 'm':
        scale = MiB;
        break;
      case 'G':
      case 'g':
        scale = GiB;
        break;
      default:
        throw std::invalid_argument("bad size: " + text);
    }
  }
  return static_cast<std::uint64_t>(v * static_cast<double>(scale));
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Suite {
  const char* name;
  const char* family;  // the trace family of its records, named by a failure line
  double budget_s;     // its share of the device time, cut to what is left of --budget
  bool peer;
  std::function<void(TraceSet&, const Config&, const Deadline&)> run;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  Config config;
  std::string out_dir, prefix = "xc";
  std::vector<std::string> wanted;
  double budget = 400;
  std::size_t cap = 2000;
  try {
    for (std::size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
        return args[++i];
      };
      if (a == "--out")
        out_dir = value();
      else if (a == "--prefix")
        prefix = value();
      else if (a == "--suites")
        wanted = split(value());
      else if (a == "--budget")
        budget = std::stod(value());
      else if (a == "--quick")
        config.quick = true;
      else if (a == "--max-bytes")
        config.max_bytes = parse_bytes(value());
      else if (a == "--uvm-max-bytes")
        config.uvm_max_bytes = parse_bytes(value());
      else if (a == "--size-step")
        config.size_step = std::stoi(value());
      else if (a == "--jitter-samples")
        config.jitter_samples = std::stoi(value());
      else if (a == "--methods")
        config.methods = split(value());
      else if (a == "--peer")
        config.peer = std::stoi(value());
      else if (a == "--allow-self-peer")
        config.allow_self_peer = true;
      else if (a == "--samples-cap")
        cap = std::stoul(value());
      else if (a == "--list") {
        for (Method m : all_methods()) std::printf("%s\n", name(m));
        return 0;
      } else if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else {
        throw std::invalid_argument("unknown option " + a);
      }
    }
    if (out_dir.empty()) throw std::invalid_argument("--out DIR is required");
    if (config.size_step < 2) throw std::invalid_argument("--size-step must be >= 2");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xc: %s\n%s", e.what(), kUsage);
    return 2;
  }
  if (wanted.empty()) wanted = {"copies", "launch", "host", "uvm", "jitter", "gemm"};
  mkdir(out_dir.c_str(), 0755);
  config.samples_dir = out_dir + "/samples";
  mkdir(config.samples_dir.c_str(), 0755);

  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "xc: no CUDA GPU visible\n");
    return 1;
  }
  const Deadline overall(budget);
  std::unique_ptr<Lane> lane;
  auto local = [&](void (*f)(Lane&, TraceSet&, const Config&, const Deadline&)) {
    return [&lane, f](TraceSet& out, const Config& c, const Deadline& d) {
      if (!lane) lane = std::make_unique<Lane>(0);
      f(*lane, out, c, d);
    };
  };
  const std::vector<Suite> suites = {
      {"copies", "copy", 80, false, local(run_local_copies)}, {"launch", "launch", 15, false, local(run_launch)},
      {"host", "launch", 15, false, local(run_host_costs)},   {"uvm", "uvm", 60, false, local(run_uvm)},
      {"jitter", "jitter", 80, false, local(run_jitter)},     {"gemm", "step", 30, false, local(run_gemm)},
      {"peer_copies", "copy", 90, true, run_peer_copies},     {"peer_uvm", "uvm", 40, true, run_peer_uvm},
      {"peer_jitter", "jitter", 80, true, run_peer_jitter},
  };
  for (const auto& w : wanted) {
    bool known = false;
    for (const auto& s : suites) known = known || w == s.name;
    if (!known) {
      std::fprintf(stderr, "xc: unknown suite %s\n%s", w.c_str(), kUsage);
      return 2;
    }
  }
  TraceSet out(out_dir, prefix, header_json(args, "", ""), cap);
  int failures = 0;
  for (const auto& w : wanted) {
    for (const auto& s : suites) {
      if (w != s.name) continue;
      if (s.peer && gpus < 2 && !config.allow_self_peer) {
        std::fprintf(stderr, "xc: %s needs two GPUs (or --allow-self-peer for a dry run): skipped\n", s.name);
        continue;
      }
      if (overall.left_s() < 5) {
        std::fprintf(stderr, "xc: %s skipped: the budget is spent\n", s.name);
        continue;
      }
      const double t0 = now_s();
      const std::size_t before = out.records();
      try {
        s.run(out, config, Deadline(std::min(s.budget_s, overall.left_s())));
      } catch (const std::exception& e) {
        ++failures;
        std::fprintf(stderr, "xc: suite %s failed: %s\n", s.name, e.what());
        out.fail(std::string("failed-") + s.name, s.family, e.what());
      }
      std::fprintf(stderr, "xc: suite %s: %zu records, %.1f s\n", s.name, out.records() - before, now_s() - t0);
    }
  }
  lane.reset();
  out.close();
  std::fprintf(stderr, "xc: %zu records in %s\n", out.records(), out_dir.c_str());
  return failures ? 1 : 0;
}
