#include "sim/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace snsim {
namespace {

/// A number followed by a unit suffix, both still text.
struct Quantity {
  double value;
  std::string_view unit;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Quantity split(std::string_view text, std::string_view what, std::string_view example) {
  std::string_view s = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end == s.data())
    throw UnitError(
        fmt::format("cannot parse '{}' as {}: expected a number and a unit, like '{}'", text, what, example));
  if (!std::isfinite(value))
    throw UnitError(fmt::format("cannot parse '{}' as {}: the number is not finite", text, what));
  std::string_view unit = trim(s.substr(static_cast<std::size_t>(end - s.data())));
  return {value, unit};
}

/// Splits a metric or binary prefix off a unit: "GiB" -> (2^30, "B"), "GB" -> (1e9, "B"), "B" -> (1, "B").
std::pair<double, std::string_view> split_prefix(std::string_view unit) {
  static constexpr std::array<std::pair<char, int>, 6> prefixes{
      {{'k', 1}, {'M', 2}, {'G', 3}, {'T', 4}, {'P', 5}, {'E', 6}}};
  if (unit.size() < 2) return {1.0, unit};
  char p = unit.front() == 'K' ? 'k' : unit.front();  // KiB and kB are both common
  for (auto [c, power] : prefixes) {
    if (c != p) continue;
    if (unit.size() >= 3 && unit[1] == 'i') return {std::ldexp(1.0, 10 * power), unit.substr(2)};
    return {std::pow(1000.0, power), unit.substr(1)};
  }
  return {1.0, unit};
}

/// Scale of a data unit in bytes: "B" -> 1, "b" -> 1/8; nullopt if not a data unit.
std::optional<double> data_scale(std::string_view unit) {
  auto [scale, base] = split_prefix(unit);
  if (base == "B") return scale;
  if (base == "b") return scale / 8.0;
  return std::nullopt;
}

/// The problem of a value against [0, most], with a floor of 1 unit/s for a rate that is not 0.
std::string range_problem(double value, double most, std::string_view unit, bool rate) {
  if (std::isnan(value)) return "is not a number";
  if (value < 0) return "cannot be negative";
  if (!std::isfinite(value) || value > most) return fmt::format("is more than {:g} {}", most, unit);
  if (rate && value > 0 && value < 1) return fmt::format("is less than 1 {} (and not 0)", unit);
  return "";
}

template <class Q>
Q checked(Q quantity, std::string_view text, std::string_view what) {
  if (const auto problem = quantity_problem(quantity); !problem.empty())
    throw UnitError(fmt::format("cannot parse '{}' as {}: {}", text, what, problem));
  return quantity;
}

}  // namespace

std::string quantity_problem(Seconds time) {
  auto problem = range_problem(time.count(), MAX_DURATION_S, "s", false);
  return problem.starts_with("is more") ? problem + " (31.7 years)" : problem;
}
std::string quantity_problem(BytesPerSecond rate) {
  return range_problem(rate.count(), MAX_BANDWIDTH_BPS, "B/s", true);
}
std::string quantity_problem(Flops work) {
  return range_problem(work.count(), MAX_WORK_FLOP, "FLOP", false);
}
std::string quantity_problem(FlopsPerSecond rate) {
  return range_problem(rate.count(), MAX_FLOP_RATE, "FLOP/s", true);
}

Bytes parse_bytes(std::string_view text) {
  const auto q = split(text, "a size", "64MiB");
  if (q.unit.empty())
    throw UnitError(
        fmt::format("cannot parse '{}' as a size: missing unit (try '{}B' or '{}MiB')", text, q.value, q.value));
  const auto scale = data_scale(q.unit);
  if (!scale)
    throw UnitError(
        fmt::format("cannot parse '{}' as a size: unknown unit '{}' (expected B, KiB, MiB, GiB, TiB, PiB, EiB, kB, "
                    "MB, GB, TB or bits: b, Gb)",
                    text, q.unit));
  const double bytes = q.value * *scale;
  if (bytes < 0) throw UnitError(fmt::format("cannot parse '{}' as a size: a size cannot be negative", text));
  if (bytes >= 0x1p64) throw UnitError(fmt::format("cannot parse '{}' as a size: more than 16 EiB", text));
  if (bytes != std::floor(bytes))
    throw UnitError(fmt::format("cannot parse '{}' as a size: not a whole number of bytes", text));
  return Bytes{static_cast<std::uint64_t>(bytes)};
}

Seconds parse_seconds(std::string_view text) {
  const auto q = split(text, "a time", "1.5us");
  static constexpr std::array<std::pair<std::string_view, double>, 9> units{{{"s", 1.0},
                                                                             {"ms", 1e-3},
                                                                             {"us", 1e-6},
                                                                             {"µs", 1e-6},
                                                                             {"ns", 1e-9},
                                                                             {"ps", 1e-12},
                                                                             {"min", 60.0},
                                                                             {"h", 3600.0},
                                                                             {"sec", 1.0}}};
  if (q.unit.empty())
    throw UnitError(
        fmt::format("cannot parse '{}' as a time: missing unit (try '{}us' or '{}s')", text, q.value, q.value));
  for (auto [name, scale] : units)
    if (name == q.unit) return checked(Seconds{q.value * scale}, text, "a time");
  throw UnitError(fmt::format("cannot parse '{}' as a time: unknown unit '{}' (expected s, ms, us, ns, ps, min or h)",
                              text, q.unit));
}

BytesPerSecond parse_bandwidth(std::string_view text) {
  const auto q = split(text, "a bandwidth", "450GBps");
  if (q.unit.empty())
    throw UnitError(fmt::format("cannot parse '{}' as a bandwidth: missing unit (try '{}GBps' or '{}Gbps')", text,
                                q.value, q.value));
  std::string_view data = q.unit;
  if (data.ends_with("/s"))
    data.remove_suffix(2);
  else if (data.ends_with("ps"))
    data.remove_suffix(2);
  else
    data = {};
  const auto scale = data.empty() ? std::nullopt : data_scale(data);
  if (!scale)
    throw UnitError(
        fmt::format("cannot parse '{}' as a bandwidth: unknown unit '{}' (expected bytes per second like "
                    "GBps, GB/s, GiBps, or bits per second like Gbps)",
                    text, q.unit));
  return checked(BytesPerSecond{q.value * *scale}, text, "a bandwidth");
}

namespace {
/// "TFLOP" -> 1e12 for `flop` units; for rates the suffix /s, ps or s is removed by the caller.
std::optional<double> flop_scale(std::string_view unit) {
  auto [scale, base] = split_prefix(unit);
  if (base == "FLOP" || base == "flop" || base == "Flop" || base == "f") return scale;
  return std::nullopt;
}
}  // namespace

Flops parse_flops(std::string_view text) {
  const auto q = split(text, "an amount of work", "2.2TFLOP");
  const auto scale = flop_scale(q.unit);
  if (!scale)
    throw UnitError(
        fmt::format("cannot parse '{}' as an amount of work: {} (expected FLOP with a prefix, like "
                    "'2.2TFLOP')",
                    text, q.unit.empty() ? std::string("missing unit") : fmt::format("unknown unit '{}'", q.unit)));
  return checked(Flops{q.value * *scale}, text, "an amount of work");
}

FlopsPerSecond parse_flop_rate(std::string_view text) {
  const auto q = split(text, "a compute rate", "989TFLOP/s");
  // Accept FLOP/s, FLOPps, FLOPS and flops: the first suffix that leaves a valid FLOP unit wins.
  std::optional<double> scale;
  for (std::string_view suffix : {"/s", "ps", "s", "S"}) {
    if (!q.unit.ends_with(suffix) || q.unit.size() <= suffix.size()) continue;
    scale = flop_scale(q.unit.substr(0, q.unit.size() - suffix.size()));
    if (scale) break;
  }
  if (!scale)
    throw UnitError(
        fmt::format("cannot parse '{}' as a compute rate: {} (expected FLOP/s with a prefix, like "
                    "'989TFLOP/s')",
                    text, q.unit.empty() ? std::string("missing unit") : fmt::format("unknown unit '{}'", q.unit)));
  return checked(FlopsPerSecond{q.value * *scale}, text, "a compute rate");
}

namespace {
/// Formats v/scale with up to 6 significant digits, no trailing zeros.
std::string scaled(double v, double scale, std::string_view unit) {
  return fmt::format("{:.6g} {}", v / scale, unit);
}

std::string decimal(double v, std::string_view unit) {
  static constexpr std::array<std::string_view, 7> prefixes{"", "k", "M", "G", "T", "P", "E"};
  std::size_t i = 0;
  double scale = 1;
  while (i + 1 < prefixes.size() && std::abs(v) >= scale * 1000) {
    scale *= 1000;
    ++i;
  }
  return scaled(v, scale, fmt::format("{}{}", prefixes[i], unit));
}
}  // namespace

std::string to_string(Bytes size) {
  static constexpr std::array<std::string_view, 7> units{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t i = 0;
  double scale = 1;
  const auto v = static_cast<double>(size.count());
  while (i + 1 < units.size() && v >= scale * 1024) {
    scale *= 1024;
    ++i;
  }
  return scaled(v, scale, units[i]);
}

std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string to_string(Seconds time) {
  const double t = time.count();
  const double a = std::abs(t);
  if (a == 0) return "0 s";
  if (a < 1e-6) return scaled(t, 1e-9, "ns");
  if (a < 1e-3) return scaled(t, 1e-6, "us");
  if (a < 1) return scaled(t, 1e-3, "ms");
  return scaled(t, 1, "s");
}

std::string to_string(BytesPerSecond rate) {
  return decimal(rate.count(), "B/s");
}
std::string to_string(Flops work) {
  return decimal(work.count(), "FLOP");
}
std::string to_string(FlopsPerSecond rate) {
  return decimal(rate.count(), "FLOP/s");
}

}  // namespace snsim
