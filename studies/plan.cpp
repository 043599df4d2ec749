#include "studies/plan.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sim/config.hpp"
#include "sim/error.hpp"
#include "sim/files.hpp"
#include "sim/registry.hpp"
#include "sim/topology.hpp"
#include "studies/inputs.hpp"
#include "studies/results.hpp"
#include "studies/sweep.hpp"
#include "studies/sweep_plan.hpp"
#include "topologies/register.hpp"
#include "workloads/training/presets.hpp"

namespace snsim::studies {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace workloads::training;

namespace {

// Model chunks per stage the search tries: none, and the small interleavings Megatron-LM's published runs use
// (Narayanan et al. 2021, §5.3, up to 4; each halving of the bubble adds as many pipeline transfers).
constexpr int INTERLEAVINGS[] = {1, 2, 4};
// Context-parallel sizes the search tries, and the least tokens of a sequence a CP rank keeps: below it a ring
// round's attention is too short to hide the next chunk's K and V (the 512-token case of
// workloads/training/context_test.cpp shows 40 % of its exchange).
constexpr int CONTEXT_SPLITS[] = {1, 2, 4};
constexpr int CP_MIN_TOKENS = 4096;

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

const char* recompute_name(Recompute r) {
  return r == Recompute::none ? "none" : r == Recompute::selective ? "selective" : "full";
}

[[noreturn]] void flag_error(std::string_view flag, std::string_view message) {
  throw_input_error({std::string(flag), 0, 0}, "", message);
}

}  // namespace

std::string PlanCandidate::label() const {
  const std::string cp = parallel.cp > 1 ? fmt::format("-cp{}", parallel.cp) : "";
  const std::string vp = parallel.vp > 1 ? fmt::format("-vp{}", parallel.vp) : "";
  const std::string etp = parallel.etp > 1 ? fmt::format("-etp{}", parallel.etp) : "";
  return fmt::format("tp{}{}-pp{}{}-dp{}-ep{}{}-mb{}-{}-zero{}", parallel.tp, cp, parallel.pp, vp, parallel.dp,
                     parallel.ep, etp, micro_batch, recompute_name(parallel.recompute),
                     parallel.fsdp   ? 3
                     : parallel.zero ? 1
                                     : 0);
}

std::vector<PlanCandidate> enumerate_plans(const ModelSpec& model, const PlanSpace& space) {
  std::vector<PlanCandidate> out;
  if (space.gpus < 1 || space.global_batch < 1) return out;
  for (int tp : divisors(std::min(space.gpus_per_domain, space.gpus))) {
    if (space.gpus % tp != 0 || model.heads % tp != 0 || model.ffn_hidden % tp != 0) continue;
    if (!model.mla && model.kv_heads % tp != 0) continue;
    if (model.moe && (model.moe->shared_experts * expert_ffn(model)) % tp != 0) continue;
    for (int cp : CONTEXT_SPLITS) {
      // Ring attention wants long shards: each CP rank keeps at least CP_MIN_TOKENS of every sequence.
      // Ring attention over a sliding window is not modelled (workloads/training/model.cpp refuses it).
      const bool windowed = model.sliding_window && model.sliding_window->tokens < model.sequence;
      if (cp > 1 && (windowed || space.gpus % (tp * cp) != 0 || model.sequence % (2 * cp) != 0 ||
                     model.sequence / cp < CP_MIN_TOKENS))
        continue;
      for (int pp : divisors(space.gpus / (tp * cp))) {
        if (model.layers % pp != 0) continue;
        const int dp = space.gpus / (tp * cp * pp);
        if (space.global_batch % dp != 0) continue;
        const int per_replica = space.global_batch / dp;
        // Experts: every ep dividing the experts and dp x cp; the experts' FFN unsplit, or split as the dense
        // layers' over the TP group (etp = tp, Megatron-Core's default before MoE parallel folding).
        std::vector<std::pair<int, int>> expert_grids{{1, 1}};
        if (model.moe) {
          expert_grids.clear();
          for (int ep : divisors(dp * cp)) {
            if (model.moe->experts % ep != 0) continue;
            expert_grids.emplace_back(ep, 1);
            if (tp > 1 && expert_ffn(model) % tp == 0) expert_grids.emplace_back(ep, tp);
          }
        }
        for (const auto& [ep, etp] : expert_grids) {
          for (int b : divisors(per_replica)) {
            if ((static_cast<long long>(b) * model.sequence / cp) % tp != 0) continue;
            const int micro_batches = per_replica / b;
            for (int vp : INTERLEAVINGS) {
              // Megatron-Core's interleaving: pp x vp divides the layers, the micro-batches are a multiple of pp.
              if (vp > 1 && (pp == 1 || model.layers % (pp * vp) != 0 || micro_batches % pp != 0)) continue;
              for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
                for (int zero : {0, 1, 3}) {               // none, the distributed optimizer (ZeRO-1), FSDP (ZeRO-3)
                  if (zero > 0 && dp * cp == 1) continue;  // nothing to shard over
                  PlanCandidate c;
                  c.parallel.tp = tp;
                  c.parallel.cp = cp;
                  c.parallel.pp = pp;
                  c.parallel.vp = vp;
                  c.parallel.dp = dp;
                  c.parallel.ep = ep;
                  c.parallel.etp = etp;
                  c.parallel.micro_batches = micro_batches;
                  c.parallel.sequence_parallel = tp > 1;
                  c.parallel.recompute = r;
                  c.parallel.zero = zero == 1;
                  c.parallel.fsdp = zero == 3;
                  c.micro_batch = b;
                  out.push_back(c);
                }
            }
          }
        }
      }
    }
  }
  return out;
}

Footprint peak_footprint(const ModelSpec& model, const PlanCandidate& candidate, const MemorySpec& memory) {
  ModelSpec m = model;
  m.micro_batch = candidate.micro_batch;
  const auto all = footprints(m, candidate.parallel, memory);
  return *std::ranges::max_element(all, {}, [](const Footprint& f) { return f.total().count(); });
}

Seconds estimate_step(const ModelSpec& model, const PlanCandidate& candidate, FlopsPerSecond peak, BytesPerSecond intra,
                      BytesPerSecond inter, int gpus_per_domain) {
  ModelSpec m = model;
  m.micro_batch = candidate.micro_batch;
  const ParallelPlan& p = candidate.parallel;
  const double gpus = p.gpus();
  const double step_flops = step_model_flops(m, p).count();  // 3 x forward
  // Recomputation repeats forward work in the backward: all of it (full) or the attention core (selective).
  double forward_layers = 0, attention_core = 0;
  const AttentionWidths w = attention_widths(m);
  const double b = m.micro_batch, s = m.sequence;
  for (int l = 0; l < m.layers; ++l) {
    forward_layers += layer_model_flops(m, l).count();
    attention_core += 2 * b * s * s * m.heads * (w.qk_head + w.v_head);
  }
  const double per_micro = p.recompute == Recompute::full        ? forward_layers
                           : p.recompute == Recompute::selective ? attention_core
                                                                 : 0;
  const double flops = step_flops + per_micro * p.micro_batches * p.dp;
  double compute = flops / (gpus * peak.count());
  compute *= 1 + static_cast<double>(p.pp - 1) / (p.vp * p.micro_batches);  // the (interleaved) 1F1B bubble
  const double e = models::element_size(m.dtype);
  // TP: four all-reduces (or reduce-scatter + all-gather pairs) of the layer's b s h activations per layer, forward
  // and backward, on the rank's layers and micro-batches; a ring moves 2 (t - 1) / t of the bytes.
  double tp_time = 0;
  if (p.tp > 1) {
    const double bytes = 4 * b * s / p.cp * m.hidden * e * (m.layers / p.pp) * p.micro_batches;
    tp_time = 2.0 * (p.tp - 1) / p.tp * bytes / intra.count();
  }
  // DP: one all-reduce of the rank's gradients over DP x CP (reduce-scatter + all-gather with the distributed
  // optimizer: the same bytes). It strides by tp over tp x cp x dp consecutive ranks: it leaves the domain when they
  // do. The CP ring's exchange is taken as hidden behind the attention.
  double dp_time = 0;
  if (p.dp * p.cp > 1) {
    double params = 0;
    for (int l = 0; l < m.layers / p.pp; ++l) params += dense_layer_params(m, p, l) + expert_layer_params(m, p, l);
    const double bytes = params * gradient_bytes(m);
    const double n = p.dp * p.cp;
    // FSDP moves the parameters twice and the gradients once per micro-batch, (n - 1) / n of each in a ring.
    const double passes = p.fsdp ? 3.0 * p.micro_batches : 2.0;
    dp_time = passes * (n - 1) / n * bytes / (p.tp * n > gpus_per_domain ? inter : intra).count();
  }
  return Seconds{compute + tp_time + dp_time};
}

// ---- the command --------------------------------------------------------------------------------------------------

namespace {

/// The topology map of --topology: a file holding it (or a scenario with `topology:`), or flow YAML.
std::string topology_yaml(const std::string& text) {
  std::shared_ptr<ConfigDocument> doc;
  if (fs::exists(text))
    doc = ConfigDocument::load_file(text);
  else
    doc = ConfigDocument::load_string(text, "--topology");
  ConfigNode node = doc->root();
  if (node.is_map() && node.has("topology")) node = node.child("topology");
  if (!node.is_map())
    flag_error("--topology", fmt::format("found '{}'; expected a topology file or map such as "
                                         "'{{type: superpod, gpu: h100, nodes: 8}}'",
                                         text));
  return flow_yaml(node);
}

/// The model map of --model: a preset name or flow YAML.
std::string model_yaml(const std::string& text) {
  if (find_preset(text)) return fmt::format("{{preset: {}}}", text);
  if (!text.empty() && text.front() == '{') {
    const auto doc = ConfigDocument::load_string(text, "--model");
    return flow_yaml(doc->root());
  }
  flag_error("--model", fmt::format("unknown preset '{}'; expected one of {} (or a map such as "
                                    "'{{preset: llama3.1-8b, layers: 8}}')",
                                    text, preset_names()));
}

/// The base scenario every candidate overrides: the fabric, the model (its batch and sequence from the flags), one
/// step. `micro_batch` and `parallel` are there so that the sweep's overrides find their places.
std::string base_scenario(const PlanOptions& o) {
  std::string topology, model, models, memory;
  if (!o.scenario.empty()) {
    if (!fs::exists(o.scenario)) flag_error("--scenario", fmt::format("no file '{}'", o.scenario));
    const auto doc = ConfigDocument::load_file(o.scenario);
    const ConfigNode root = doc->root();
    topology = flow_yaml(root.child("topology"));
    if (const auto m = root.maybe_child("models")) models = flow_yaml(*m);
    const ConfigNode list = root.child("workloads");
    const auto items = list.elements();
    const auto training = std::ranges::find_if(items, [](const ConfigNode& w) {
      return w.is_map() && w.has("type") && w.child("type").is_scalar() && w.child("type").scalar() == "training";
    });
    if (training == items.end()) list.fail("no training workload: `snsim plan` plans one");
    const ConfigNode m = training->child("model");
    // Its memory settings (framework overhead, NCCL buffers) count in every plan's footprint; whether to simulate
    // what does not fit is the plan's to say, and it does not.
    if (const auto mem = training->maybe_child("memory"); mem && mem->is_map())
      for (const auto& key : mem->keys())
        if (key != "allow_oversubscribe")
          memory += fmt::format("{}{}: {}", memory.empty() ? "" : ", ", key, flow_yaml(mem->child(key)));
    model = m.is_scalar() ? fmt::format("{{preset: {}}}", m.scalar()) : flow_yaml(m);
  }
  if (!o.model.empty()) model = model_yaml(o.model);
  if (!o.framework_overhead.empty()) {
    const auto flag =
        ConfigDocument::load_string("{framework_overhead: " + o.framework_overhead + "}", "--framework-overhead");
    flag->root().required<Bytes>("framework_overhead");
    std::string kept;
    if (!memory.empty()) {
      const auto doc = ConfigDocument::load_string("{" + memory + "}", "memory");
      for (const auto& key : doc->root().keys())
        if (key != "framework_overhead") kept += fmt::format("{}: {}, ", key, flow_yaml(doc->root().child(key)));
    }
    memory = kept + "framework_overhead: " + o.framework_overhead;
  }
  if (!o.topology.empty()) topology = topology_yaml(o.topology);
  if (model.empty()) flag_error("--model", "missing; expected a preset name (or --scenario FILE)");
  if (topology.empty()) flag_error("--topology", "missing; expected a topology file or map (or --scenario FILE)");

  // The model's own keys, less what the plan decides; the flags' batch and sequence win.
  const auto doc = ConfigDocument::load_string(model, "--model");
  const ConfigNode m = doc->root();
  if (!m.is_map()) flag_error("--model", fmt::format("found '{}'; expected a preset name or a map", model));
  std::vector<std::string> items;
  for (const auto& key : m.keys()) {
    if (key == "micro_batch" || key == "micro_batches") continue;
    if ((key == "global_batch" && o.global_batch) || (key == "sequence" && o.sequence)) continue;
    items.push_back(fmt::format("{}: {}", key, flow_yaml(m.child(key))));
  }
  if (o.global_batch) items.push_back(fmt::format("global_batch: {}", *o.global_batch));
  if (o.sequence) items.push_back(fmt::format("sequence: {}", *o.sequence));
  if (!o.global_batch && !m.has("global_batch"))
    flag_error("--global-batch", "missing; expected the sequences per step, such as --global-batch 512");
  items.emplace_back("micro_batch: 1");
  return fmt::format(
      "# The base scenario of `snsim plan`: every plan.yaml point overrides its parallel plan and micro batch.\n"
      "name: plan\nseed: 1\ntopology: {}\n{}workloads:\n  - type: training\n    steps: 1\n    model: {{{}}}\n"
      "    parallel: {{tp: 1}}\n{}",
      topology, models.empty() ? "" : fmt::format("models: {}\n", models), fmt::join(items, ", "),
      memory.empty() ? "" : fmt::format("    memory: {{{}}}\n", memory));
}

std::string sweep_plan_yaml(const std::vector<PlanCandidate>& chosen) {
  std::string yaml =
      "# The sweep `snsim plan` runs: one point per plan it simulates, best estimate first.\n"
      "name: plan\nbase: base.yaml\ntrials: 1\nreport: {x: peak_hbm_gib, y: samples_per_s}\naxes:\n"
      "  - name: plan\n    values:\n";
  for (const auto& c : chosen) {
    const ParallelPlan& p = c.parallel;
    yaml += fmt::format(
        "      - label: {}\n        set:\n          workloads[0].parallel: {{tp: {}, cp: {}, pp: {}, vp: {}, dp: {}, "
        "ep: {}, etp: {}, sequence_parallel: {}, recompute: {}, zero: {}, fsdp: {}}}\n          "
        "workloads[0].model.micro_batch: {}\n",
        c.label(), p.tp, p.cp, p.pp, p.vp, p.dp, p.ep, p.etp, p.sequence_parallel, recompute_name(p.recompute), p.zero,
        p.fsdp, c.micro_batch);
  }
  return yaml;
}

std::string cell(const std::optional<double>& v, int digits) {
  return v ? fmt::format("{:.{}f}", *v, digits) : "-";
}

std::string results_markdown(const PlanOutcome& o, const std::string& title, std::size_t rows) {
  std::string md = title;
  md +=
      "| rank | plan | tp | pp | dp | ep | micro batch x count | recompute | zero | step s | tokens/s/GPU | MFU % | "
      "comm ms/GPU | HBM GiB | weights | grads | optimizer | activations | comm buffers | overhead |\n"
      "|---:|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < std::min(rows, o.ranked.size()); ++i) {
    const PlanResult& r = o.ranked[i];
    const ParallelPlan& p = r.candidate.parallel;
    const Footprint& f = r.footprint;
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} x {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | "
        "{:.1f} | {:.1f} | {:.1f} |\n",
        r.step_time_s ? fmt::format("{}", i + 1) : "-", r.candidate.label(), p.tp, p.pp, p.dp, p.ep,
        r.candidate.micro_batch, p.micro_batches, recompute_name(p.recompute),
        p.fsdp   ? "fsdp"
        : p.zero ? "yes"
                 : "no",
        cell(r.step_time_s, 3), cell(r.tokens_per_s_per_gpu, 0), cell(r.mfu_pct, 1), cell(r.comm_ms_per_gpu, 1),
        gib(f.total()), gib(f.weights), gib(f.gradients), gib(f.optimizer), gib(f.activations), gib(f.communication),
        gib(f.overhead));
  }
  return md;
}

json result_json(const PlanResult& r) {
  const ParallelPlan& p = r.candidate.parallel;
  const Footprint& f = r.footprint;
  json j{{"label", r.candidate.label()},
         {"tp", p.tp},
         {"cp", p.cp},
         {"pp", p.pp},
         {"vp", p.vp},
         {"dp", p.dp},
         {"ep", p.ep},
         {"etp", p.etp},
         {"micro_batch", r.candidate.micro_batch},
         {"micro_batches", p.micro_batches},
         {"sequence_parallel", p.sequence_parallel},
         {"recompute", recompute_name(p.recompute)},
         {"zero", p.zero},
         {"fsdp", p.fsdp},
         {"estimate_s", r.estimate_s},
         {"outcome", r.outcome},
         {"memory_gib",
          {{"stage", f.stage},
           {"total", gib(f.total())},
           {"weights", gib(f.weights)},
           {"gradients", gib(f.gradients)},
           {"optimizer", gib(f.optimizer)},
           {"activations", gib(f.activations)},
           {"communication", gib(f.communication)},
           {"overhead", gib(f.overhead)}}}};
  auto put = [&](const char* name, const std::optional<double>& v) { j[name] = v ? json(*v) : json(nullptr); };
  put("step_time_s", r.step_time_s);
  put("tokens_per_s_per_gpu", r.tokens_per_s_per_gpu);
  put("mfu_pct", r.mfu_pct);
  put("comm_ms_per_gpu", r.comm_ms_per_gpu);
  return j;
}

}  // namespace

namespace {

PlanOutcome plan_one(const PlanOptions& o);

/// The topology map of the base scenario resized from `base_gpus` to `gpus`: its `nodes` scaled by the GPUs a node
/// holds, or its `gpus` set.
std::string resized_topology(const ConfigNode& topology, int base_gpus, int gpus) {
  std::vector<std::string> items;
  const bool by_nodes = topology.has("nodes");
  if (!by_nodes && !topology.has("gpus"))
    flag_error("--gpus", fmt::format("several GPU counts need a topology with `nodes` or `gpus` to resize; found {}",
                                     flow_yaml(topology)));
  for (const auto& key : topology.keys()) {
    std::string value = flow_yaml(topology.child(key));
    if (by_nodes && key == "nodes") {
      const int nodes = topology.required<int>("nodes");
      const int per_node = nodes > 0 ? base_gpus / nodes : 0;
      if (per_node < 1 || gpus % per_node != 0)
        flag_error("--gpus",
                   fmt::format("found {}; expected a multiple of the topology's {} GPUs per node", gpus, per_node));
      value = std::to_string(gpus / per_node);
    } else if (!by_nodes && key == "gpus") {
      value = std::to_string(gpus);
    }
    items.push_back(fmt::format("{}: {}", key, value));
  }
  return fmt::format("{{{}}}", fmt::join(items, ", "));
}

/// One plan per GPU count, each in DIR/gpus-N, and the best of each side by side in DIR/plan.md and plan.json.
PlanOutcome plan_range(const PlanOptions& o) {
  std::set<int> counts;
  for (int g : o.gpus) {
    if (g < 1) flag_error("--gpus", fmt::format("found {}; expected at least 1", g));
    counts.insert(g);
  }
  const std::string base = base_scenario(o);
  const auto doc = ConfigDocument::load_string(base, "base.yaml");
  const ConfigNode topology = doc->root().child("topology");
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  const int base_gpus = static_cast<int>(topologies.create(topology)->build().gpus().size());
  std::vector<std::string> resized;
  for (int g : counts) resized.push_back(resized_topology(topology, base_gpus, g));  // every flag checked first

  PlanOutcome out;
  const ConfigNode model_node = doc->root().child("workloads").elements().front().child("model");
  const ModelSpec model = parse_model(model_node, topologies.create(topology)->build());
  const std::string name = model.preset.empty() ? std::string("model") : model.preset;
  out.dir = o.out.empty() ? "plan-" + name : o.out;
  make_output_dir(out.dir);
  std::vector<std::string> problems;
  json rows = json::array();
  std::string table =
      "| GPUs | best plan | step s | tokens/s/GPU | MFU % | HBM GiB | valid | fit | simulated |\n"
      "|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  std::string sections;
  std::size_t index = 0;
  for (int g : counts) {
    PlanOptions one = o;
    one.gpus = {g};
    one.topology = resized[index++];
    one.out = (fs::path(out.dir) / fmt::format("gpus-{}", g)).string();
    json row{{"gpus", g}, {"dir", fmt::format("gpus-{}", g)}};
    try {
      PlanOutcome p = plan_one(one);
      const PlanResult* best = p.ranked.empty() || !p.ranked.front().step_time_s ? nullptr : &p.ranked.front();
      table +=
          fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", g, best ? best->candidate.label() : "-",
                      best ? cell(best->step_time_s, 3) : "-", best ? cell(best->tokens_per_s_per_gpu, 0) : "-",
                      best ? cell(best->mfu_pct, 1) : "-",
                      best ? fmt::format("{:.1f}", gib(best->footprint.total())) : "-", p.enumerated, p.fitting,
                      std::ranges::count_if(p.ranked, [](const PlanResult& r) { return r.step_time_s.has_value(); }));
      row["enumerated"] = p.enumerated;
      row["fitting"] = p.fitting;
      row["best"] = best ? result_json(*best) : json(nullptr);
      for (const auto& f : p.failures) out.failures.push_back(fmt::format("{} GPUs: {}", g, f));
      if (!p.plot_problem.empty()) out.plot_problem = p.plot_problem;
      std::string section = p.markdown;
      if (section.starts_with("# ")) section = "#" + section;
      sections += "\n" + section;
      out.hbm_gib = p.hbm_gib;
      out.per_count.push_back(std::move(p));
    } catch (const InputError& e) {
      // A count no plan fits (or none is valid on): its row says why; the others go on.
      problems.emplace_back(e.what());
      table += fmt::format("| {} | none: {} | - | - | - | - | - | - | - |\n", g, e.what());
      row["problem"] = e.what();
    }
    rows.push_back(row);
  }
  if (out.per_count.empty()) throw InputError(problems.front());
  const std::string title = fmt::format(
      "# Plans for {} on {} GPU counts ({}), global batch {} x {} tokens\n\nThe best simulated plan of each count; "
      "each count's plans below and in its folder.\n\n",
      name, counts.size(), fmt::join(counts, ", "), model_node.required<int>("global_batch"), model.sequence);
  out.markdown = title + table + sections;
  write_file(fs::path(out.dir) / "plan.md", out.markdown);
  const json summary{{"model", model.preset}, {"counts", rows}};
  write_file(fs::path(out.dir) / "plan.json", summary.dump(1) + "\n");
  return out;
}

}  // namespace

PlanOutcome run_plan(const PlanOptions& o) {
  if (o.gpus.size() > 1) return plan_range(o);
  return plan_one(o);
}

namespace {

PlanOutcome plan_one(const PlanOptions& o) {
  if (o.budget < 1) flag_error("--budget", "found 0; expected at least 1 plan to simulate");
  if (o.global_batch && *o.global_batch < 1)
    flag_error("--global-batch", fmt::format("found {}; expected a positive number of sequences", *o.global_batch));
  if (o.sequence && *o.sequence < 1)
    flag_error("--seq", fmt::format("found {}; expected a positive number of tokens", *o.sequence));
  if (!o.gpus.empty() && o.gpus.front() < 1)
    flag_error("--gpus", fmt::format("found {}; expected at least 1", o.gpus.front()));

  const std::string base = base_scenario(o);
  const auto doc = ConfigDocument::load_string(base, "base.yaml");
  const ConfigNode root = doc->root();
  Registry<Topology> topologies("topology");
  topologies::register_topologies(topologies);
  const Fabric fabric = topologies.create(root.child("topology"))->build();
  if (auto problem = fabric.check()) root.child("topology").fail(*problem);
  const int gpus = static_cast<int>(fabric.gpus().size());
  if (!o.gpus.empty() && o.gpus.front() != gpus)
    flag_error("--gpus", fmt::format("found {}; expected the topology's {} GPUs (set its gpus or nodes to change it)",
                                     o.gpus.front(), gpus));
  const ConfigNode model_node = root.child("workloads").elements().front().child("model");
  const ModelSpec model = parse_model(model_node, fabric);
  const int global_batch = model_node.required<int>("global_batch");
  if (global_batch < 1) flag_error("--global-batch", fmt::format("found {}; expected at least 1", global_batch));

  const GpuSpec& gpu = *fabric.device(fabric.gpus().front()).gpu;
  const auto domain = fabric.nvlink_domain(fabric.gpus().front());
  const PlanSpace space{gpus, static_cast<int>(domain.size()), global_batch};
  // The memory settings as the training workload reads them (workloads/training/training.cpp).
  MemorySpec memory;
  const ConfigNode memory_node = root.child("workloads").elements().front().section("memory");
  memory.framework_overhead = memory_node.optional<Bytes>("framework_overhead", memory.framework_overhead);
  memory.communicator_buffers = memory_node.optional<Bytes>("communicator_buffers", memory.communicator_buffers);
  PlanOutcome out;
  out.gpus = gpus;
  out.hbm_gib = gib(gpu.memory);
  const auto all = enumerate_plans(model, space);
  out.enumerated = all.size();
  if (all.empty())
    flag_error("--global-batch", fmt::format("{} sequences on {} GPUs leave no valid plan: no data-parallel size "
                                             "GPUs / (tp x cp x pp) divides it (tp up to {}, pp dividing {} layers)",
                                             global_batch, gpus, space.gpus_per_domain, model.layers));

  // Memory first: what does not fit is not simulated.
  const FlopsPerSecond peak = gpu.peak(model.dtype).value_or(gpu.dense_bf16);
  const BytesPerSecond intra = domain.size() > 1 ? fabric.cost(domain[0], domain[1]).bottleneck : gpu.hbm_bandwidth;
  BytesPerSecond inter = intra;
  for (DeviceId g : fabric.gpus())
    if (!std::ranges::binary_search(domain, g)) {
      inter = fabric.cost(fabric.gpus().front(), g).bottleneck;
      break;
    }
  std::vector<PlanResult> fitting;
  std::optional<PlanResult> smallest;
  for (const auto& c : all) {
    PlanResult r{c, peak_footprint(model, c, memory), 0, {}, {}, {}, {}, "not run"};
    if (!smallest || r.footprint.total() < smallest->footprint.total()) smallest = r;
    if (r.footprint.total() > gpu.memory) continue;
    r.estimate_s = estimate_step(model, c, peak, intra, inter, space.gpus_per_domain).count();
    fitting.push_back(r);
  }
  out.fitting = fitting.size();
  if (fitting.empty())
    throw InputError(fmt::format(
        "snsim plan: no plan fits: {} valid plans of {} on {} x {} ({:.1f} GiB of HBM each), the smallest footprint "
        "is {:.1f} GiB per GPU ({}: weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f} GiB); "
        "use more GPUs, GPUs with more HBM or a smaller model",
        all.size(), model.preset.empty() ? "the model" : model.preset, gpus, gpu.model, out.hbm_gib,
        gib(smallest->footprint.total()), smallest->candidate.label(), gib(smallest->footprint.weights),
        gib(smallest->footprint.gradients), gib(smallest->footprint.optimizer), gib(smallest->footprint.activations)));
  std::ranges::stable_sort(fitting, {}, &PlanResult::estimate_s);
  const std::size_t simulate = std::min(o.budget, fitting.size());
  std::vector<PlanCandidate> chosen;
  for (std::size_t i = 0; i < simulate; ++i) chosen.push_back(fitting[i].candidate);

  out.dir = o.out.empty() ? "plan-" + (model.preset.empty() ? std::string("model") : model.preset) : o.out;
  make_output_dir(out.dir);
  write_file(fs::path(out.dir) / "base.yaml", base);
  write_file(fs::path(out.dir) / "plan.yaml", sweep_plan_yaml(chosen));
  SweepOptions sweep;
  sweep.plan = (fs::path(out.dir) / "plan.yaml").string();
  sweep.out = out.dir;
  sweep.jobs = o.jobs;
  sweep.shard = o.shard;
  const SweepSetup setup = prepare_sweep(sweep);
  const SweepOutcome ran = execute_sweep(setup, [](const SweepRun&, const std::string&, const SweepOutcome&) {});
  out.failures = ran.failures;
  out.plot_problem = ran.plot_problem;

  std::map<std::string, json> by_key;
  for (auto& r : merge_results(read_results(setup.results))) by_key[r["key"].get<std::string>()] = r;
  for (const auto& run : setup.runs) {
    const auto it = by_key.find(run.key);
    if (it == by_key.end()) continue;
    PlanResult& r = fitting[run.point];
    const json& m = it->second["metrics"];
    r.outcome = it->second["outcome"].get<std::string>();
    auto get = [&](const char* name) -> std::optional<double> {
      return m.contains(name) && m[name].is_number() ? std::optional<double>(m[name].get<double>()) : std::nullopt;
    };
    if (r.outcome != "completed") continue;
    r.step_time_s = get("step_time_s");
    r.mfu_pct = get("mfu_pct");
    r.comm_ms_per_gpu = get("comm_only_ms_per_gpu");
    if (const auto samples = get("samples_per_s")) r.tokens_per_s_per_gpu = *samples * model.sequence / gpus;
  }
  // Simulated plans by step time (then tokens/s/GPU, then estimate); the rest after them, by estimate.
  std::ranges::stable_sort(fitting, [](const PlanResult& a, const PlanResult& b) {
    if (a.step_time_s.has_value() != b.step_time_s.has_value()) return a.step_time_s.has_value();
    if (a.step_time_s && *a.step_time_s != *b.step_time_s) return *a.step_time_s < *b.step_time_s;
    if (a.tokens_per_s_per_gpu && b.tokens_per_s_per_gpu && *a.tokens_per_s_per_gpu != *b.tokens_per_s_per_gpu)
      return *a.tokens_per_s_per_gpu > *b.tokens_per_s_per_gpu;
    return a.estimate_s < b.estimate_s;
  });
  out.ranked = std::move(fitting);

  const std::size_t simulated = static_cast<std::size_t>(
      std::ranges::count_if(out.ranked, [](const PlanResult& r) { return r.step_time_s.has_value(); }));
  const std::string title = fmt::format(
      "# Plans for {} on {} x {} ({:.1f} GiB HBM), global batch {} x {} tokens\n\n"
      "{} valid plans, {} fit in memory, {} simulated (budget {}{}), best first.\n\n",
      model.preset.empty() ? "the model" : model.preset, gpus, gpu.model, out.hbm_gib, global_batch, model.sequence,
      out.enumerated, out.fitting, simulated, o.budget,
      setup.shards > 1 ? fmt::format(", shard {}/{}", setup.shard, setup.shards) : "");
  out.markdown = results_markdown(out, title, o.show);
  const std::string note =
      "\nstep s: simulated step time; tokens/s/GPU: global batch x sequence / step / GPUs; comm ms/GPU: time a "
      "GPU communicates without computing; HBM GiB and its breakdown: the fullest pipeline stage's footprint "
      "(docs/training.md). The sweep's own table is sweep.md.\n";
  write_file(fs::path(out.dir) / "plan.md", results_markdown(out, title, out.ranked.size()) + note);
  json plans = json::array();
  for (const auto& r : out.ranked) plans.push_back(result_json(r));
  const json summary{{"model", model.preset},
                     {"gpus", gpus},
                     {"gpu", gpu.model},
                     {"hbm_gib", out.hbm_gib},
                     {"global_batch", global_batch},
                     {"sequence", model.sequence},
                     {"enumerated", out.enumerated},
                     {"fitting", out.fitting},
                     {"simulated", simulated},
                     {"budget", o.budget},
                     {"plans", plans}};
  write_file(fs::path(out.dir) / "plan.json", summary.dump(1) + "\n");
  return out;
}

}  // namespace

}  // namespace snsim::studies
