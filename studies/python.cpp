#include "studies/python.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

extern char** environ;

namespace snsim::studies {

std::optional<int> run_program(const std::string& program, const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  std::vector<std::string> storage{program};
  storage.insert(storage.end(), args.begin(), args.end());
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return std::nullopt;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return std::nullopt;
  }
  if (!WIFEXITED(status)) return std::nullopt;
  return WEXITSTATUS(status);
}

// A pyenv or conda python earlier on PATH often lacks python3-matplotlib, hence Debian's own interpreter after it.
std::optional<std::string> find_python(std::vector<std::string>& tried) {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("SNSIM_PYTHON"); chosen && *chosen)
    candidates.emplace_back(chosen);
  else
    candidates = {"python3", "/usr/bin/python3"};
  for (const std::string& python : candidates) {
    const auto status = run_program(python, {"-c", "import matplotlib"}, /*quiet=*/true);
    if (status == 0) return python;
    tried.push_back(fmt::format("{} ({})", python, status ? "no matplotlib" : "not found"));
  }
  return std::nullopt;
}

ScriptRun run_python_script(const std::string& script, const std::vector<std::string>& args) {
  if (!std::filesystem::exists(script))
    return {std::nullopt,
            fmt::format("the plotting script {} is missing (it is installed with snsim, in share/snsim/plot)", script)};
  std::vector<std::string> tried;
  const auto python = find_python(tried);
  if (!python)
    return {std::nullopt, fmt::format("needs python3 with matplotlib (Debian: apt install python3-matplotlib; or set "
                                      "SNSIM_PYTHON); tried: {}",
                                      fmt::join(tried, ", "))};
  std::vector<std::string> command{script};
  command.insert(command.end(), args.begin(), args.end());
  std::cout.flush();  // our lines before the script's
  const auto status = run_program(*python, command, /*quiet=*/false);
  if (!status) return {std::nullopt, fmt::format("{} {} did not finish", *python, script)};
  return {status, ""};
}

std::filesystem::path plot_script_dir() {
  // The executable's own path, not argv[0]: snsim may be started through PATH or a symbolic link.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "share/snsim/plot";
  return (exe.parent_path().parent_path() / "share" / "snsim" / "plot").lexically_normal();
}

ScriptRun run_plot_script(std::string_view name, const std::vector<std::string>& args) {
  return run_python_script((plot_script_dir() / name).string(), args);
}

}  // namespace snsim::studies
