#include "validation/validate.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "models/models.hpp"
#include "models/params.hpp"
#include "runtime/runner.hpp"
#include "sim/config.hpp"
#include "sim/isolated.hpp"
#include "sim/progress.hpp"
#include "sim/simulation.hpp"
#include "topologies/gpus.hpp"
#include "topologies/register.hpp"
#include "validation/importers/platform.hpp"
#include "validation/twins.hpp"

namespace snsim::validation {
namespace {

// The jitter family is validated on distributions: its twins draw this many samples, so that the simulated p99.9
// is the model's (50 samples beyond it), not the luck of a few draws.
constexpr int JITTER_SAMPLES = 50'000;

/// The use of records that do not alternate along their curve: jitter distributions and training steps only
/// validate (what the models compose to), the probe's lone GEMMs of the step family only calibrate (the compute rate
/// and the power model, as the probe's launch records are the launch costs and crosscheck's host clocks the host's;
/// launches and GEMMs timed by other programs validate them).
std::optional<Use> fixed_use(const TracedRecord& t) {
  const auto& r = *t.record;
  if (r.family == Family::launch) {
    const std::string method = timing_method(*t.trace, r);
    const bool fitted = method == "probe" ||
                        (method == "host_clock" && (r.variant == "host_enqueue" || r.variant == "dispatch")) ||
                        (method == "host_poll" && r.variant == "wakeup");
    return fitted ? Use::calibration : Use::validation;
  }
  if (r.family == Family::jitter) return Use::validation;
  // The probe's lone GEMMs fit the compute rate and the power model; other programs' GEMMs (other operand data, other
  // timing) check them.
  if (r.family == Family::step)
    return r.test == "gemm" && timing_method(*t.trace, r) == "probe" ? Use::calibration : Use::validation;
  if (r.family == Family::compute) {
    // GEMMs split by shape, not along a curve: half the shapes fit the kernel model, the other half check it, so a
    // shape is never predicted from its own time (nor its neighbours' in the file). GEMMs batched between two
    // events fit the event's cost apart from the kernel's (with the GEMMs timed an event each); the other methods
    // validate.
    if (r.test == "gemm_method") return r.variant == "batch_events" ? Use::calibration : Use::validation;
    // Sustained normal-data GEMMs fit the power cap's clock; the same GEMM on each operand pattern checks it.
    if (r.test == "gemm_sustained") return Use::calibration;
    // Whole training steps only validate (what the kernel models compose to), as the step family's.
    if (r.test == "train_step") return Use::validation;
    // PyTorch's memory-bound kernels: every other size of each kernel, along its curve.
    if (r.test == "memory_bound" || r.test == "adamw") return std::nullopt;
    if (r.test == "gemm_data") return Use::validation;
    const std::string shape =
        fmt::format("{}/{}/{}x{}x{}x{}", r.extra.value("dtype", ""), r.extra.value("layout", ""), extra_number(r, "m"),
                    extra_number(r, "n"), extra_number(r, "k"), extra_number(r, "batch", 1));
    std::uint64_t hash = 14695981039346656037ull;  // FNV-1a: the same split on every platform and build
    for (const unsigned char c : shape) hash = (hash ^ c) * 1099511628211ull;
    return hash % 2 == 0 ? Use::calibration : Use::validation;
  }
  return std::nullopt;
}

std::string curve_key(const TracedRecord& t) {
  const auto& r = *t.record;
  return fmt::format("{}|{}|{}|{}|{}", t.trace->source, to_string(r.family), r.test, r.variant,
                     fmt::join(r.ranks, ","));
}

double median_of(std::vector<double> values) {
  return quantile(std::move(values), 0.5);
}

}  // namespace

std::string_view to_string(Use use) {
  return use == Use::calibration ? "calibration" : "validation";
}

std::vector<Use> split_records(const std::vector<TracedRecord>& records) {
  std::map<std::string, std::vector<std::size_t>> curves;
  for (std::size_t i = 0; i < records.size(); ++i) curves[curve_key(records[i])].push_back(i);
  std::vector<Use> uses(records.size(), Use::calibration);
  for (auto& [key, members] : curves) {
    std::ranges::stable_sort(members, {}, [&](std::size_t i) { return records[i].record->bytes; });
    for (std::size_t k = 0; k < members.size(); ++k) {
      const auto& t = records[members[k]];
      if (t.record->family == Family::jitter && k == 0 && timing_method(*t.trace, *t.record) == "events_single")
        uses[members[k]] = Use::calibration;  // the host's jitter (fits/jitter_fit.cpp); the larger sizes validate it
      else if (const auto use = fixed_use(t))
        uses[members[k]] = *use;
      else if (members.size() > 1 && k % 2 == 1)
        uses[members[k]] = Use::validation;
    }
  }
  return uses;
}

namespace {

// The GPUs of an HGX node and of an NVL72 rack (topologies/hgx.cpp, topologies/nvl72.cpp).
constexpr int HGX_GPUS = 8;
constexpr int NVL72_GPUS = 72;

/// What the trace says of its machine, and what the user adds.
struct PlatformFacts {
  std::string gpu;  // preset
  std::string gpu_note;
  int ranks = 0;
  std::optional<int> nodes, gpus_per_node;
  std::string network;
};

/// A count of the header's `platform` (a hand-editable line): checked against int's range before it is read as one,
/// so that 99999999999 ranks is refused rather than wrapped.
std::optional<int> platform_count(const Trace& trace, const Json& platform, const char* key) {
  const auto it = platform.find(key);
  if (it == platform.end() || !it->is_number_integer()) return std::nullopt;
  constexpr auto most = std::numeric_limits<int>::max();
  const bool fits = it->is_number_unsigned() ? it->get<std::uint64_t>() <= static_cast<std::uint64_t>(most)
                                             : it->get<std::int64_t>() >= 0 && it->get<std::int64_t>() <= most;
  if (!fits)
    throw_input_error({trace.source, 1, 0}, fmt::format("platform.{}", key),
                      fmt::format("expected a count from 0 to {}, found {}", most, it->dump()));
  return it->get<int>();
}

PlatformFacts facts_of(const Trace& trace) {
  PlatformFacts f;
  if (const auto p = trace.header.extra.find("platform"); p != trace.header.extra.end() && p->is_object()) {
    if (p->contains("gpu_preset") && (*p)["gpu_preset"].is_string()) f.gpu = (*p)["gpu_preset"].get<std::string>();
    if (p->contains("gpu_preset_note") && (*p)["gpu_preset_note"].is_string())
      f.gpu_note = (*p)["gpu_preset_note"].get<std::string>();
    f.ranks = platform_count(trace, *p, "ranks").value_or(0);
    f.nodes = platform_count(trace, *p, "nodes");
    f.gpus_per_node = platform_count(trace, *p, "gpus_per_node");
    if (p->contains("network") && (*p)["network"].is_string()) f.network = (*p)["network"].get<std::string>();
  } else {
    std::string name;
    for (const auto& g : trace.header.gpus)
      if (!g.name.empty()) name = g.name;
    const auto model = detail::gpu_model(name);
    f.gpu = model.preset.value_or("");
    f.gpu_note = model.note;
    f.ranks = static_cast<int>(trace.header.gpus.size());
    f.nodes = 1;
  }
  for (const auto& r : trace.records)
    for (int rank : r.ranks) f.ranks = std::max(f.ranks, rank + 1);
  return f;
}

int positive_setting(const std::string& file, const std::string& key, const std::string& value) {
  int n = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (error != std::errc() || end != value.data() + value.size() || n < 1)
    throw_input_error({file, 0, 0}, key, fmt::format("--set {}={}: expected a count of 1 or more", key, value));
  return n;
}

}  // namespace

Platform platform_of(const Trace& trace, const PlatformChoice& choice) {
  PlatformFacts f = facts_of(trace);
  Platform p;
  for (const auto& assignment : choice.sets) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos)
      throw_input_error({"--set", 0, 0}, assignment, "expected KEY=VALUE (gpu, nodes, gpus_per_node, topology.*)");
    const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
    if (key == "gpu") {
      f.gpu = value;
    } else if (key == "nodes") {
      f.nodes = positive_setting(trace.source, key, value);
    } else if (key == "gpus_per_node") {
      f.gpus_per_node = positive_setting(trace.source, key, value);
    } else if (key.starts_with("topology.")) {
      p.sets.push_back(assignment);
    } else {
      throw_input_error({"--set", 0, 0}, key,
                        fmt::format("unknown platform key '{}'; known: gpu, nodes, gpus_per_node, topology.*", key));
    }
  }
  // A table without its rank list (a pasted log): as many ranks as the user's nodes hold, else the smallest run.
  if (f.ranks == 0) f.ranks = f.nodes && f.gpus_per_node ? *f.nodes * *f.gpus_per_node : 2;
  auto identity = [&](int n) {
    p.gpu_of_rank.resize(static_cast<std::size_t>(n));
    std::iota(p.gpu_of_rank.begin(), p.gpu_of_rank.end(), 0);
  };
  if (choice.scenario_file) {
    p.scenario_file = *choice.scenario_file;
    p.description = fmt::format("the topology of {}", *choice.scenario_file);
    identity(f.ranks);
    return p;
  }
  const auto presets = topologies::gpu_preset_names();
  if (f.gpu.empty())
    throw_input_error({trace.source, 0, 0}, "platform.gpu",
                      fmt::format("{}: pass --set gpu=PRESET or --platform SCENARIO.yaml",
                                  f.gpu_note.empty() ? "the file names no GPU model" : f.gpu_note));
  if (std::ranges::find(presets, f.gpu) == presets.end())
    throw_input_error({"--set", 0, 0}, "gpu",
                      fmt::format("unknown GPU '{}'; known: {}", f.gpu, fmt::join(presets, ", ")));

  p.gpu = f.gpu;
  if (f.gpu == "gb200") {  // the NVLink domain is the rack, whatever the trays (nodes) the log counts
    const int racks = (f.ranks + NVL72_GPUS - 1) / NVL72_GPUS;
    identity(f.ranks);
    if (racks == 1) {
      p.topology = fmt::format("{{type: nvl72, gpus: {}}}", std::max(2, f.ranks));
      p.description = fmt::format("an NVL72 rack of {} GB200 GPUs", std::max(2, f.ranks));
    } else {
      p.topology = fmt::format("{{type: superpod, node: nvl72, gpu: gb200, nodes: {}}}", racks);
      p.description = fmt::format("a superpod of {} NVL72 racks", racks);
    }
    return p;
  }
  if (!f.nodes) {
    if (f.ranks > HGX_GPUS)
      throw_input_error({trace.source, 0, 0}, "platform.nodes",
                        fmt::format("the file does not say how its {} ranks are spread over nodes: pass --set "
                                    "nodes=N (and gpus_per_node=M)",
                                    f.ranks));
    f.nodes = 1;
  }
  if (*f.nodes == 1) {
    if (f.ranks > HGX_GPUS)
      throw_input_error(
          {trace.source, 0, 0}, "platform.ranks",
          fmt::format("{} ranks on one node: an HGX node has at most {} GPUs; pass --set nodes=N", f.ranks, HGX_GPUS));
    const int gpus = std::max(2, f.ranks);
    identity(f.ranks);
    p.topology = fmt::format("{{type: hgx, gpu: {}, gpus: {}}}", f.gpu, gpus);
    p.description = fmt::format("an HGX node of {} {} GPUs", gpus, f.gpu);
    return p;
  }
  const int per_node = f.gpus_per_node.value_or((f.ranks + *f.nodes - 1) / *f.nodes);
  if (per_node > HGX_GPUS)
    throw_input_error({trace.source, 0, 0}, "platform.gpus_per_node",
                      fmt::format("{} GPUs per node: an HGX node has at most {}", per_node, HGX_GPUS));
  // A node's ranks run on its first GPUs (nccl-tests and perftest number the ranks node after node).
  for (int r = 0; r < f.ranks; ++r) p.gpu_of_rank.push_back(r / per_node * HGX_GPUS + r % per_node);
  p.topology = fmt::format("{{type: superpod, node: hgx, gpu: {}, nodes: {}}}", f.gpu, *f.nodes);
  p.description =
      fmt::format("a superpod of {} HGX {} nodes over InfiniBand, {} GPUs of each used", *f.nodes, f.gpu, per_node);
  if (!f.network.empty() && f.network != "ib") p.description += fmt::format(" (the file's network: {})", f.network);
  return p;
}

std::shared_ptr<ConfigDocument> platform_document(const Platform& platform) {
  auto document =
      platform.scenario_file.empty()
          ? ConfigDocument::load_string(fmt::format("topology: {}\n", platform.topology), "<validation platform>")
          : ConfigDocument::load_file(platform.scenario_file);
  for (const auto& assignment : platform.sets) document->set(assignment, "--set");
  return document;
}

namespace {

/// The record with its ranks on the platform's GPUs; an imported record that names no ranks ran on all of them.
TraceRecord place(const Trace& trace, const TraceRecord& record, const Platform& platform) {
  TraceRecord placed = record;
  if (placed.ranks.empty() && !imported_source(trace).empty())
    for (std::size_t r = 0; r < platform.gpu_of_rank.size(); ++r) placed.ranks.push_back(static_cast<int>(r));
  for (int& rank : placed.ranks)
    if (rank >= 0 && static_cast<std::size_t>(rank) < platform.gpu_of_rank.size())
      rank = platform.gpu_of_rank[static_cast<std::size_t>(rank)];
  return placed;
}

}  // namespace

std::vector<Simulated> simulate_twins(const Platform& platform, const std::vector<TracedRecord>& records,
                                      const TwinOptions& options) {
  const std::string text = run_isolated([&]() -> std::string {
    // The topology from the user's scenario file, or the one built from the trace; the models from the defaults
    // and --params only (a scenario's other sections are not the platform).
    auto scenario = platform_document(platform);
    auto document = platform.scenario_file.empty() ? scenario : ConfigDocument::load_string("{}", "<validation>");
    if (options.params) document->set(fmt::format("models.params={}", *options.params), "--params");
    models::apply_params(*document);
    Registry<Topology> topologies("topology");
    topologies::register_topologies(topologies);
    const Fabric fabric = topologies.create(scenario->root().child("topology"))->build();
    const auto models = models::Models::load(document->root().section("models"));
    document->reject_unknown_keys();

    const std::size_t gpus = fabric.gpus().size();
    std::vector<int> everyone(gpus);
    std::iota(everyone.begin(), everyone.end(), 0);
    const workloads::Group all = std::make_shared<const std::vector<int>>(everyone);
    std::vector<workloads::Program> programs(gpus);
    std::vector<Twin> twins(records.size());
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto placed = place(*records[i].trace, *records[i].record, platform);
      auto made = make_twin(*records[i].trace, placed, static_cast<int>(gpus), models, platform.gpu_of_rank);
      if (auto* reason = std::get_if<std::string>(&made)) {
        out.push_back({{"skipped", *reason}});
        continue;
      }
      twins[i] = std::get<Twin>(std::move(made));
      out.push_back(nullptr);
      twins[i].samples = records[i].record->family == Family::jitter ? JITTER_SAMPLES
                                                                     : std::min(twins[i].samples, options.max_samples);
      for (int s = -twins[i].warmup; s < twins[i].samples; ++s) {
        for (std::size_t r = 0; r < gpus; ++r) {
          for (auto op : twins[i].sample[r]) {
            op.phase = static_cast<int>(i);
            op.tag = s;
            programs[r].ops.push_back(std::move(op));
          }
          programs[r].ops.push_back(workloads::Op{workloads::BarrierOp{all, true}, static_cast<int>(i), s});
        }
      }
    }
    std::uint64_t total_ops = 0;
    for (const auto& p : programs) total_ops += workloads::expanded_size(p.ops);
    Simulation simulation(fabric);
    workloads::Runner runner(simulation, models, std::move(programs), options.seed);
    runner.launch();
    std::optional<SimulationProgress> progress;
    if (!options.progress.empty())
      progress.emplace(options.progress, total_ops, [&runner] { return runner.ops_ended(); });
    const Seconds simulated = simulation.run();
    if (progress) progress->finish(simulated);
    if (const auto stuck = runner.unfinished(); !stuck.empty())
      throw std::runtime_error(fmt::format("twins deadlocked: ranks {} did not finish", fmt::join(stuck, ", ")));

    // Each sample spans from its first op's start to the end of its last measured op.
    std::map<std::pair<int, int>, std::pair<double, double>> spans;  // (record, sample) -> (start, end)
    for (const auto& op : runner.take_records()) {
      const auto& twin = twins[static_cast<std::size_t>(op.phase)];
      auto [it, inserted] = spans.try_emplace({op.phase, op.tag}, op.start.count(), -1.0);
      it->second.first = std::min(it->second.first, op.start.count());
      if (twin.measured_label.empty() || op.label.find(twin.measured_label) != std::string::npos)
        it->second.second = std::max(it->second.second, op.end.count());
    }
    std::vector<std::vector<double>> values(records.size());
    for (const auto& [key, span] : spans) {
      if (key.second < 0) continue;  // a warm-up sample
      const auto& twin = twins[static_cast<std::size_t>(key.first)];
      const double per_repetition = (span.second - span.first) / twin.repetitions;
      values[static_cast<std::size_t>(key.first)].push_back(
          twin.rate_bytes ? static_cast<double>(twin.rate_bytes->count()) / per_repetition : per_repetition);
    }
    for (std::size_t i = 0; i < records.size(); ++i)
      if (out[i].is_null()) out[i] = {{"samples", values[i]}};
    return out.dump();
  });
  std::vector<Simulated> simulated;
  for (const auto& entry : nlohmann::json::parse(text)) {
    Simulated s;
    if (entry.contains("skipped")) s.skipped = entry["skipped"].get<std::string>();
    if (entry.contains("samples")) s.samples = entry["samples"].get<std::vector<double>>();
    simulated.push_back(std::move(s));
  }
  return simulated;
}

bool KnownMiss::matches(const Comparison& c) const {
  return c.family == family && c.test == test && (variant.empty() || c.variant == variant) &&
         (statistic.empty() || c.statistic == statistic) && c.bytes >= from && c.bytes <= to;
}

Bounds load_bounds(const std::string& yaml, const std::string& file_name) {
  auto document = ConfigDocument::load_string(yaml, file_name);
  Bounds bounds;
  const ConfigNode root = document->root();
  for (const auto& name : root.keys()) {
    const ConfigNode node = root.child(name);
    if (name == "known_misses") {
      for (const auto& m : node.elements()) {
        KnownMiss miss{m.required<std::string>("family"),      m.required<std::string>("test"),
                       m.optional<std::string>("variant", ""), m.optional<std::string>("statistic", ""),
                       m.optional<Bytes>("from", Bytes{0}),    m.optional<Bytes>("to", Bytes{~0ull}),
                       m.required<std::string>("why")};
        if (!family_from_string(miss.family))
          m.fail_key("family", fmt::format("not a trace family; known: {}", known_family_names()));
        bounds.known_misses.push_back(std::move(miss));
      }
      continue;
    }
    // A family, or family/test: a row of its own for one test of the family, with bounds of its own.
    const auto slash = name.find('/');
    if (!family_from_string(name.substr(0, slash)) || (slash != std::string::npos && slash + 1 == name.size()))
      node.fail(
          fmt::format("not a trace family, family/test or known_misses; known families: {}", known_family_names()));
    FamilyBound b{node.maybe<double>("median"), node.maybe<double>("max")};
    for (auto [key, value] : {std::pair{"median", b.median}, {"max", b.max}})
      if (value && !(*value > 0)) node.fail_key(key, fmt::format("must be > 0, got {}", *value));
    bounds.families[name] = b;
  }
  document->reject_unknown_keys();
  return bounds;
}

namespace {

/// Why none of an imported file's records was compared, reasons counted: the file is an error, not a row of zeros.
[[noreturn]] void nothing_compared(const Trace& trace, const std::vector<std::string>& reasons) {
  std::map<std::string, int> counted;
  for (const auto& r : reasons) ++counted[r];
  std::vector<std::string> parts;
  for (const auto& [reason, n] : counted) parts.push_back(fmt::format("{} x {}", n, reason));
  throw_input_error(
      {trace.source, 0, 0}, "",
      fmt::format("none of its {} records can be compared with snsim: {}", trace.records.size(),
                  parts.empty() ? std::string("the file holds no result") : fmt::format("{}", fmt::join(parts, "; "))));
}

/// The summary of `comparisons` (validation uses only; those `excluded` are counted apart).
void summarise(const std::vector<const Comparison*>& comparisons,
               const std::function<bool(const Comparison&)>& excluded, double& median, double& max, int& excluded_count,
               double& max_all) {
  std::vector<double> errors, all_errors;
  for (const Comparison* c : comparisons) {
    if (c->use != Use::validation) continue;
    all_errors.push_back(std::abs(c->error));
    if (excluded && excluded(*c))
      ++excluded_count;
    else
      errors.push_back(std::abs(c->error));
  }
  if (!errors.empty()) {
    median = median_of(errors);
    max = *std::ranges::max_element(errors);
  }
  if (!all_errors.empty()) max_all = *std::ranges::max_element(all_errors);
}

// Worst records listed per test of an imported file.
constexpr std::size_t WORST_RECORDS = 3;

}  // namespace

ValidationResult validate(const std::vector<Trace>& traces, const Bounds& bounds, const TwinOptions& options) {
  std::vector<TracedRecord> all;
  for (const auto& t : traces)
    for (const auto& r : t.records) all.push_back({&t, &r});
  auto uses = split_records(all);
  // Records of other tools' output calibrated nothing in use: every one validates.
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!imported_source(*all[i].trace).empty()) uses[i] = Use::validation;

  // One simulation per platform, and the jitter family in one of its own: its draws then do not depend on which
  // other records are validated with it.
  std::map<const Trace*, Platform> platforms;
  for (const auto& t : traces) platforms.emplace(&t, platform_of(t, options.platform));
  std::map<std::pair<Platform, bool>, std::vector<std::size_t>> by_platform;
  for (std::size_t i = 0; i < all.size(); ++i)
    by_platform[{platforms.at(all[i].trace), all[i].record->family == Family::jitter}].push_back(i);
  std::vector<Simulated> simulated(all.size());
  for (const auto& [platform, members] : by_platform) {
    std::vector<TracedRecord> group;
    for (auto i : members) group.push_back(all[i]);
    auto results = simulate_twins(platform.first, group, options);
    for (std::size_t k = 0; k < members.size(); ++k) simulated[members[k]] = std::move(results[k]);
  }

  ValidationResult result;
  std::map<std::pair<bool, std::string>, FamilySummary> families;  // (imported, family)
  std::map<std::string, std::vector<std::string>> autocorrelations;
  std::map<const Trace*, std::vector<std::string>> not_compared;
  std::map<const Trace*, int> compared;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& r = *all[i].record;
    const std::string family(to_string(r.family));
    const std::string source = imported_source(*all[i].trace);
    // The record's family, and its family/test where the bounds give that test a row of its own.
    std::vector<FamilySummary*> rows;
    for (const std::string& name : {family, family + "/" + r.test}) {
      if (name != family && !bounds.families.contains(name)) continue;
      auto& summary = families[{!source.empty(), name}];
      summary.family = name;
      summary.imported = !source.empty();
      rows.push_back(&summary);
    }
    if (!simulated[i].skipped.empty() || simulated[i].samples.empty()) {
      const std::string reason = simulated[i].skipped.empty() ? "no sample simulated" : simulated[i].skipped;
      for (auto* summary : rows) {
        ++summary->skipped;
        ++summary->skipped_reasons[reason];
        summary->note = reason;
      }
      not_compared[all[i].trace].push_back(reason);
      result.skipped.push_back(fmt::format("{}:{}: {}", all[i].trace->source, r.id, reason));
      continue;
    }
    ++compared[all[i].trace];
    for (auto* summary : rows) (uses[i] == Use::calibration ? summary->calibration_count : summary->validation_count)++;
    auto compare = [&](std::string statistic, double measured, double predicted) {
      Comparison c{all[i].trace->source,
                   r.id,
                   family,
                   r.test,
                   r.variant,
                   r.bytes,
                   uses[i],
                   std::move(statistic),
                   std::string(to_string(r.unit)),
                   measured,
                   predicted,
                   measured > 0 ? predicted / measured - 1 : 0,
                   source.empty() ? "snsim-probe" : source,
                   timing_method(*all[i].trace, r)};
      result.comparisons.push_back(std::move(c));
    };
    const auto& predicted = simulated[i].samples;
    compare("median", r.median, median_of(predicted));
    if (r.family == Family::jitter && !r.samples.empty()) {
      compare("p99", quantile(r.samples, 0.99), quantile(predicted, 0.99));
      compare("p99.9", quantile(r.samples, 0.999), quantile(predicted, 0.999));
      autocorrelations[family].push_back(fmt::format("{} measured {:.2f} simulated {:.2f}", r.test,
                                                     lag1_autocorrelation(r.samples), lag1_autocorrelation(predicted)));
    }
  }
  for (const auto& t : traces)
    if (!imported_source(t).empty() && compared[&t] == 0) nothing_compared(t, not_compared[&t]);

  auto is_imported = [](const Comparison& c) { return c.source != "snsim-probe"; };
  for (auto& [key, summary] : families) {
    const auto& [imported, name] = key;
    std::vector<const Comparison*> members;
    for (const auto& c : result.comparisons)
      if ((c.family == name || c.family + "/" + c.test == name) && is_imported(c) == imported) members.push_back(&c);
    summarise(
        members,
        [&](const Comparison& c) {
          return std::ranges::any_of(bounds.known_misses, [&](const KnownMiss& m) { return m.matches(c); });
        },
        summary.median_abs_error, summary.max_abs_error, summary.known_misses, summary.max_abs_error_all);
    // Bounds judge the probe's traces; other tools' output only when the user asks (--bounds): their machines are
    // not the ones the bounds were set on.
    const bool judged = !imported || bounds.judge_imported;
    if (auto it = bounds.families.find(name); judged && it != bounds.families.end()) {
      summary.bound = it->second;
      summary.has_bound = true;
      if (summary.validation_count == 0) {
        summary.pass = false;
        summary.note =
            fmt::format("no validation record was simulated{}", summary.note.empty() ? "" : ": " + summary.note);
      }
      if (summary.bound.median && summary.median_abs_error > *summary.bound.median) summary.pass = false;
      if (summary.bound.max && summary.max_abs_error > *summary.bound.max) summary.pass = false;
    }
    if (auto it = autocorrelations.find(name); !imported && it != autocorrelations.end())
      summary.note = fmt::format("lag-1 autocorrelation: {}", fmt::join(it->second, "; "));
    result.pass = result.pass && summary.pass;
    result.families.push_back(summary);
  }

  std::map<std::pair<std::string, std::string>, std::vector<double>> by_method;  // (family, method) -> |errors|
  for (const auto& c : result.comparisons)
    if (c.use == Use::validation) by_method[{c.family, c.method}].push_back(std::abs(c.error));
  for (auto& [key, errors] : by_method)
    result.methods.push_back(
        {key.first, key.second, static_cast<int>(errors.size()), median_of(errors), *std::ranges::max_element(errors)});

  // Per test of imported traces: what a user looks at first, with the records that miss the most.
  std::map<std::tuple<std::string, std::string, std::string>, TestSummary> tests;  // (source, family, test)
  for (const auto& c : result.comparisons) {
    if (!is_imported(c)) continue;
    auto& t = tests[{c.source, c.family, c.test}];
    t.source = c.source;
    t.family = c.family;
    t.test = c.test;
    ++t.records;
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string source = imported_source(*all[i].trace);
    if (source.empty() || simulated[i].skipped.empty()) continue;
    auto& t = tests[{source, std::string(to_string(all[i].record->family)), all[i].record->test}];
    t.source = source;
    t.family = to_string(all[i].record->family);
    t.test = all[i].record->test;
    ++t.skipped;
  }
  for (auto& [key, t] : tests) {
    std::vector<const Comparison*> members;
    for (const auto& c : result.comparisons)
      if (is_imported(c) && c.source == t.source && c.family == t.family && c.test == t.test) members.push_back(&c);
    int unused = 0;
    double unused_max = 0;
    summarise(members, {}, t.median_abs_error, t.max_abs_error, unused, unused_max);
    std::ranges::stable_sort(members, std::greater<>{}, [](const Comparison* c) { return std::abs(c->error); });
    for (std::size_t k = 0; k < std::min(WORST_RECORDS, members.size()); ++k)
      t.worst.push_back(fmt::format("{}:{} {:+.1f} %", members[k]->trace, members[k]->id, 100 * members[k]->error));
    result.tests.push_back(std::move(t));
  }
  return result;
}

double lag1_autocorrelation(const std::vector<double>& series) {
  if (series.size() < 3) return 0;
  const double mean = std::accumulate(series.begin(), series.end(), 0.0) / static_cast<double>(series.size());
  double numerator = 0, denominator = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    denominator += (series[i] - mean) * (series[i] - mean);
    if (i > 0) numerator += (series[i] - mean) * (series[i - 1] - mean);
  }
  return denominator > 0 ? numerator / denominator : 0;
}

nlohmann::json ValidationResult::to_json() const {
  nlohmann::json j;
  j["pass"] = pass;
  for (const auto& f : families) {
    nlohmann::json b = nlohmann::json::object();
    if (f.bound.median) b["median"] = *f.bound.median;
    if (f.bound.max) b["max"] = *f.bound.max;
    j["families"].push_back({{"family", f.family},
                             {"imported", f.imported},
                             {"skipped_reasons", f.skipped_reasons},
                             {"validation_records", f.validation_count},
                             {"calibration_records", f.calibration_count},
                             {"skipped_records", f.skipped},
                             {"median_abs_error", f.median_abs_error},
                             {"max_abs_error", f.max_abs_error},
                             {"known_misses", f.known_misses},
                             {"max_abs_error_with_known_misses", f.max_abs_error_all},
                             {"bound", b},
                             {"pass", f.pass},
                             {"note", f.note}});
  }
  j["methods"] = nlohmann::json::array();
  for (const auto& m : methods)
    j["methods"].push_back({{"family", m.family},
                            {"method", m.method},
                            {"validation_records", m.validation_count},
                            {"median_abs_error", m.median_abs_error},
                            {"max_abs_error", m.max_abs_error}});
  for (const auto& c : comparisons)
    j["comparisons"].push_back({{"trace", c.trace},
                                {"id", c.id},
                                {"source", c.source},
                                {"method", c.method},
                                {"family", c.family},
                                {"test", c.test},
                                {"variant", c.variant},
                                {"bytes", c.bytes.count()},
                                {"use", to_string(c.use)},
                                {"statistic", c.statistic},
                                {"unit", c.unit},
                                {"measured", c.measured},
                                {"predicted", c.predicted},
                                {"error", c.error}});
  j["tests"] = nlohmann::json::array();
  for (const auto& t : tests)
    j["tests"].push_back({{"source", t.source},
                          {"family", t.family},
                          {"test", t.test},
                          {"records", t.records},
                          {"skipped_records", t.skipped},
                          {"median_abs_error", t.median_abs_error},
                          {"max_abs_error", t.max_abs_error},
                          {"worst", t.worst}});
  j["skipped"] = skipped;
  return j;
}

std::string ValidationResult::to_csv() const {
  std::string out = "trace,id,family,test,variant,bytes,use,statistic,unit,measured,predicted,error\n";
  for (const auto& c : comparisons)
    out += fmt::format("{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.6f}\n", c.trace, c.id, c.family, c.test, c.variant,
                       c.bytes.count(), to_string(c.use), c.statistic, c.unit, c.measured, c.predicted, c.error);
  return out;
}

}  // namespace snsim::validation
