// Progress lines of long commands (issue 25): `--progress` shows simulated time and ops done on stderr, and
// changes nothing else -- stdout (but its wall-time line) and report.json stay byte for byte the same.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "sim/progress.hpp"
#include "tools/test_support.hpp"

using namespace snsim::testing;

namespace {

const std::string SCENARIO =
    "name: progress\nseed: 3\ntopology: {type: hgx, gpu: h200, gpus: 4}\nworkloads:\n  - type: program\n    ops:\n"
    "      - {repeat: 50, ops: [{compute: {flops: 1TFLOP}}, {collective: {op: all_reduce, bytes: 8MiB}}]}\n";

/// stdout without the line that holds wall time and peak memory, which differ from run to run.
std::string without_wall_time(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line))
    if (!line.starts_with("# wall time:")) kept += line + '\n';
  return kept;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::vector<std::string> found;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) found.push_back(line);
  return found;
}

}  // namespace

TEST_CASE("progress: an ETA reads as minutes and seconds, hours past the hour") {
  CHECK(snsim::format_eta(0) == "0:00");
  CHECK(snsim::format_eta(65) == "1:05");
  CHECK(snsim::format_eta(3725) == "1:02:05");
  CHECK(snsim::format_eta(-3) == "0:00");
}

TEST_CASE("progress: run --progress prints its progress on stderr, and stdout and report.json stay the same") {
  TempDir dir;
  const auto scenario = dir.write("s.yaml", SCENARIO);
  const Result plain = run_snsim(dir, {"run", scenario, "--out", "plain"});
  const Result shown = run_snsim(dir, {"run", scenario, "--out", "shown", "--progress"});
  REQUIRE(plain.code == 0);
  REQUIRE(shown.code == 0);
  CHECK(plain.err.empty());  // stderr is not a terminal here: no progress unless asked
  // 4 ranks x 100 ops: the last line counts all of them.
  const auto lines = lines_starting(shown.err, "snsim run: simulated ");
  REQUIRE(!lines.empty());
  CHECK(lines.back().find("400 of 400 ops") != std::string::npos);
  CHECK(lines.back().find(" s wall") != std::string::npos);
  CHECK(without_wall_time(shown.out) == without_wall_time(plain.out));
  CHECK(without_wall_time(shown.out).find("# simulated time:") != std::string::npos);
  CHECK(read_file(dir.path() / "shown/report.json") == read_file(dir.path() / "plain/report.json"));
  // --quiet keeps stdout empty; an explicit --progress still shows progress.
  const Result quiet = run_snsim(dir, {"run", scenario, "--quiet", "--progress"});
  CHECK(quiet.code == 0);
  CHECK(quiet.out.empty());
  CHECK(!lines_starting(quiet.err, "snsim run: simulated ").empty());
}

TEST_CASE("progress: replay, compare and validate show theirs with --progress") {
  TempDir dir;
  const std::string trace =
      std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200-replay/gpt-h2048-l2-b2-s2048.kineto.json.gz";
  const Result replay = run_snsim(dir, {"replay", trace, "--progress"});
  CHECK(replay.code == 0);
  CHECK(!lines_starting(replay.err, "snsim replay: simulated ").empty());

  const auto training =
      dir.write("t.yaml",
                "name: t\ntopology: {type: hgx, gpu: h200, gpus: 2}\nworkloads:\n  - type: training\n    steps: 1\n"
                "    model: {layers: 2, hidden: 512, heads: 8, sequence: 256}\n    parallel: {dp: 2, bucket: 1GiB}\n");
  const Result compare = run_snsim(dir, {"compare", training, "--progress"});
  CHECK(compare.code == 0);
  // Its notes come first, once: the bucket holds the whole gradient.
  CHECK(compare.err.starts_with("snsim compare: note: parallel.bucket 1 GiB holds a pipeline stage's whole"));
  CHECK(!lines_starting(compare.err, "snsim compare: bsp: simulated ").empty());
  CHECK(!lines_starting(compare.err, "snsim compare: pgas: simulated ").empty());

  const std::string traces = std::string(SNSIM_SOURCE_DIR) + "/validation/traces/h200/h200x1-launch.jsonl";
  const Result validate = run_snsim(dir, {"validate", traces, "--progress"});
  CHECK(validate.code == 0);
  CHECK(!lines_starting(validate.err, "snsim validate: simulated ").empty());
}
