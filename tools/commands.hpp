// `snsim run`, `snsim info` and `snsim topo`. Each returns an exit code (tools/command_line.hpp): 0 ok, 2 bad input,
// 3 internal error or a failed run; input problems are thrown as InputError and take the command line's one error
// path.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace snsim {
class ConfigDocument;
}

namespace snsim::tools {

class CommandLine;

extern const char* const DEFAULT_SCENARIO;
extern const char* const DEFAULT_SCENARIO_NAME;

struct RunOptions {
  std::string scenario;               // empty: the embedded default
  std::string out;                    // output directory, empty: none
  std::optional<std::string> seed;    // overrides the scenario's seed (checked like the YAML value)
  std::optional<std::string> params;  // a parameter set (preset name or file) instead of the scenario's models.params
  std::vector<std::string> sets;      // --set key.path=value
  std::vector<std::string> engine;    // --log=... / --cfg=... passed to SimGrid
  std::optional<std::string> max_memory;  // refuse runs estimated above this size (scenario/limits.hpp)
  bool quiet = false;
  bool timeline = false;              // --timeline: write timeline.json whatever the scenario's output.timeline says
  std::string command = "snsim run";  // heads its warnings, notes and progress lines
  bool progress = false;              // --progress: a progress line on stderr even when it is not a terminal
  bool full = false;                  // --full: no folding (fold: false, docs/folding.md)
  bool allow_oversubscribe = false;   // --allow-oversubscribe: every training workload's memory.allow_oversubscribe
};

int run_command(const RunOptions& options);
/// `snsim run` on a document already loaded and overridden (`snsim replay` builds one); `options.scenario` names it
/// in messages. `started` is when the command began, for the run record's wall time.
int run_document(const std::shared_ptr<ConfigDocument>& doc, const RunOptions& options,
                 std::chrono::steady_clock::time_point started);
/// Every topology, model and workload with its parameters; `markdown`: as the scenario reference
/// (docs/reference/parameters.md).
int info_command(bool markdown = false);
int topo_command(const std::string& scenario, const std::vector<std::string>& sets);

/// Declares `snsim run`, `snsim info` and `snsim topo`.
void add_run_command(CommandLine& cli);
void add_info_command(CommandLine& cli);
void add_topo_command(CommandLine& cli);

}  // namespace snsim::tools
