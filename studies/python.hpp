// Running the matplotlib scripts (tools/plot/ in the source tree) from the commands and studies that draw
// (`traces plot`, `validate`, sweeps, the slow-node study, `compare`).
//
// snsim itself never links Python: it looks for an interpreter that can import matplotlib and spawns it on a script
// installed beside the executable, so that plotting stays optional and a missing matplotlib is one clear line.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace snsim::studies {

/// Runs `program` (looked up on PATH) with `args`; returns its exit status, or nullopt if it cannot be started or
/// does not exit normally. `quiet` sends its output to /dev/null. No shell: file names need no quoting.
std::optional<int> run_program(const std::string& program, const std::vector<std::string>& args, bool quiet);

/// The first Python interpreter that can import matplotlib. SNSIM_PYTHON chooses one; otherwise "python3" on PATH,
/// then Debian's own interpreter. Each candidate that fails is appended to `tried`, with why.
std::optional<std::string> find_python(std::vector<std::string>& tried);

/// How a plotting script ran: its exit status, or why it could not run.
struct ScriptRun {
  std::optional<int> status;  ///< the script's exit status; nullopt when `problem` says why it has none
  std::string problem;        ///< one line: a missing script, no python3 with matplotlib, or a script killed
};

/// Runs the Python script `script` with `args` (its output goes to ours) on the interpreter find_python chooses.
ScriptRun run_python_script(const std::string& script, const std::vector<std::string>& args);

/// Where the plotting scripts are: share/snsim/plot in the folder above the running executable's, found through
/// /proc/self/exe. Installed, that is PREFIX/share/snsim/plot beside PREFIX/bin/snsim; in the build tree,
/// build/share/snsim/plot beside build/tools/snsim, where the build copies them. Neither depends on the source tree,
/// which a user may not have.
std::filesystem::path plot_script_dir();

/// Runs the plotting script `name` ("plot_sweep.py") of plot_script_dir() with `args`, as run_python_script does.
ScriptRun run_plot_script(std::string_view name, const std::vector<std::string>& args);

}  // namespace snsim::studies
