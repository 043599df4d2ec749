// Unit-typed quantities: the only place where a number learns what it measures.
//
// Inside snsim, data is bytes (std::uint64_t), time is seconds and rates are per second (double), matching the
// s4u boundary (`Comm::sendto(..., uint64_t bytes)`, `Engine::get_clock()`, `Link::get_bandwidth()`).
// Bits, decimal and binary prefixes exist only in parsed and printed strings (docs/design.md#units):
// sizes print with binary prefixes (KiB, MiB, GiB), bandwidth with decimal ones (GB/s = 1e9 B/s, per direction).
#pragma once

#include <algorithm>
#include <cmath>
#include <compare>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace snsim {

/// An amount of data. Always bytes.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(std::uint64_t count) : count_{count} {}
  constexpr std::uint64_t count() const { return count_; }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes{a.count_ + b.count_}; }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes{a.count_ - b.count_}; }
  constexpr Bytes& operator+=(Bytes b) {
    count_ += b.count_;
    return *this;
  }
  // Whole multiples and parts only: a fraction of a byte is not a size.
  template <std::integral N>
  friend constexpr Bytes operator*(Bytes a, N n) {
    return Bytes{a.count_ * static_cast<std::uint64_t>(n)};
  }
  template <std::integral N>
  friend constexpr Bytes operator*(N n, Bytes a) {
    return Bytes{a.count_ * static_cast<std::uint64_t>(n)};
  }
  /// How many whole `b` fit in `a`.
  friend constexpr std::uint64_t operator/(Bytes a, Bytes b) { return a.count_ / b.count_; }

 private:
  std::uint64_t count_ = 0;
};

/// How many pieces of `piece` bytes hold `size` (the last one partly filled).
constexpr std::uint64_t pieces(Bytes size, Bytes piece) {
  return (size.count() + piece.count() - 1) / piece.count();
}
/// `size` cut into `parts` equal pieces, rounded up to a whole byte.
constexpr Bytes ceil_div(Bytes size, std::uint64_t parts) {
  return Bytes{(size.count() + parts - 1) / parts};
}
/// A computed amount (elements x element size, shares of a total) as whole bytes: rounded, never below zero.
inline Bytes bytes_of(double amount) {
  return Bytes{static_cast<std::uint64_t>(std::llround(std::max(0.0, amount)))};
}

/// A span of simulated (or measured) time, in seconds.
class Seconds {
 public:
  constexpr Seconds() = default;
  constexpr explicit Seconds(double count) : count_{count} {}
  constexpr double count() const { return count_; }
  friend constexpr auto operator<=>(Seconds, Seconds) = default;
  friend constexpr Seconds operator+(Seconds a, Seconds b) { return Seconds{a.count_ + b.count_}; }
  friend constexpr Seconds operator-(Seconds a, Seconds b) { return Seconds{a.count_ - b.count_}; }
  friend constexpr Seconds operator*(Seconds a, double k) { return Seconds{a.count_ * k}; }
  friend constexpr Seconds operator*(double k, Seconds a) { return Seconds{a.count_ * k}; }
  friend constexpr double operator/(Seconds a, Seconds b) { return a.count_ / b.count_; }
  constexpr Seconds& operator+=(Seconds b) {
    count_ += b.count_;
    return *this;
  }

 private:
  double count_ = 0;
};

/// A data rate in bytes per second, one direction.
class BytesPerSecond {
 public:
  constexpr BytesPerSecond() = default;
  constexpr explicit BytesPerSecond(double count) : count_{count} {}
  constexpr double count() const { return count_; }
  friend constexpr auto operator<=>(BytesPerSecond, BytesPerSecond) = default;
  friend constexpr BytesPerSecond operator+(BytesPerSecond a, BytesPerSecond b) {
    return BytesPerSecond{a.count_ + b.count_};
  }
  friend constexpr BytesPerSecond operator*(BytesPerSecond a, double k) { return BytesPerSecond{a.count_ * k}; }
  friend constexpr BytesPerSecond operator*(double k, BytesPerSecond a) { return BytesPerSecond{a.count_ * k}; }

 private:
  double count_ = 0;
};

/// An amount of floating-point work.
class Flops {
 public:
  constexpr Flops() = default;
  constexpr explicit Flops(double count) : count_{count} {}
  constexpr double count() const { return count_; }
  friend constexpr auto operator<=>(Flops, Flops) = default;

 private:
  double count_ = 0;
};

/// A compute rate in floating-point operations per second.
class FlopsPerSecond {
 public:
  constexpr FlopsPerSecond() = default;
  constexpr explicit FlopsPerSecond(double count) : count_{count} {}
  constexpr double count() const { return count_; }
  friend constexpr auto operator<=>(FlopsPerSecond, FlopsPerSecond) = default;
  friend constexpr FlopsPerSecond operator*(FlopsPerSecond a, double k) { return FlopsPerSecond{a.count_ * k}; }

 private:
  double count_ = 0;
};

// The only operations that mix units; each one is a line of physics.
constexpr Seconds operator/(Bytes size, BytesPerSecond rate) {
  return Seconds{static_cast<double>(size.count()) / rate.count()};
}
constexpr BytesPerSecond operator/(Bytes size, Seconds time) {
  return BytesPerSecond{static_cast<double>(size.count()) / time.count()};
}
constexpr Seconds operator/(Flops work, FlopsPerSecond rate) {
  return Seconds{work.count() / rate.count()};
}

// The range of every quantity a user writes, checked in one place (quantity_problem) where text becomes a quantity
// (the parsers below) and again on the platform a topology builds (Fabric::check), before any of it reaches
// SimGrid, which aborts on a duration or rate that is not finite. Beyond these a value is a typo, not a machine, and
// far enough inside a double that sums over 2^64 ops stay finite. A rate may be 0 (a key's own check says whether
// it must be > 0) but not below 1 unit per second, whose reciprocal times would leave that range.
inline constexpr double MAX_DURATION_S = 1e9;      // 31.7 years
inline constexpr double MAX_BANDWIDTH_BPS = 1e18;  // 1 EB/s, ~10^5 x an NVLink 5 GPU's 1.8 TB/s
inline constexpr double MAX_FLOP_RATE = 1e21;      // 1 ZFLOP/s, ~10^4 x an NVL72's dense BF16
inline constexpr double MAX_WORK_FLOP = 1e30;

/// What is wrong with a quantity ("is negative", "is more than 1e+09 s (31.7 years)"), or "" when it is in range.
std::string quantity_problem(Seconds time);
std::string quantity_problem(BytesPerSecond rate);
std::string quantity_problem(Flops work);
std::string quantity_problem(FlopsPerSecond rate);

/// A string that is not a valid quantity. The message says what was found and what is expected; callers
/// that know the file and key wrap it into an InputError.
class UnitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Parsers. Grammar: a decimal number, optional spaces, a unit. Prefixes k M G T P E are decimal, Ki Mi Gi Ti Pi Ei
// binary; `B` is bytes and `b` bits (SimGrid's grammar). A number without a unit is an error with a hint.
Bytes parse_bytes(std::string_view text);               // "1GiB" "64 MiB" "4B" "1GB" "800Gb"
Seconds parse_seconds(std::string_view text);           // "1.5us" "700ns" "2ms" "1s"
BytesPerSecond parse_bandwidth(std::string_view text);  // "450GBps" "450GB/s" "3600Gbps" "100GiBps"
Flops parse_flops(std::string_view text);               // "2.2TFLOP" "1e12FLOP" "5Gflop"
FlopsPerSecond parse_flop_rate(std::string_view text);  // "989TFLOPps" "989TFLOP/s" "989Tflops" "1Pf"

// Human-readable text, as a user would write it in YAML.
std::string to_string(Bytes size);           // "1 GiB", "1.5 KiB", "4 B"
std::string to_string(Seconds time);         // "700 ns", "1.5 us", "2.0013 ms"
std::string to_string(BytesPerSecond rate);  // "450 GB/s"
std::string to_string(Flops work);           // "2.2 TFLOP"
std::string to_string(FlopsPerSecond rate);  // "989 TFLOP/s"
/// A count with its thousands grouped: "1,234,567".
std::string grouped(std::uint64_t n);

// Inline, as std::literals: code inside namespace snsim writes 4.8_us without a using-directive.
inline namespace literals {
// Sizes: binary prefixes as everywhere in snsim, decimal ones (kB, MB, GB) for datasheets that use them.
constexpr Bytes operator""_B(unsigned long long n) {
  return Bytes{n};
}
constexpr Bytes operator""_KiB(unsigned long long n) {
  return Bytes{n << 10};
}
constexpr Bytes operator""_MiB(unsigned long long n) {
  return Bytes{n << 20};
}
constexpr Bytes operator""_GiB(unsigned long long n) {
  return Bytes{n << 30};
}
constexpr Bytes operator""_MB(unsigned long long n) {
  return Bytes{n * 1'000'000};
}
constexpr Bytes operator""_GB(unsigned long long n) {
  return Bytes{n * 1'000'000'000};
}
// Times: the number scaled to seconds in double, as `Seconds{x * 1e-6}` would.
constexpr Seconds operator""_s(long double v) {
  return Seconds{static_cast<double>(v)};
}
constexpr Seconds operator""_s(unsigned long long v) {
  return Seconds{static_cast<double>(v)};
}
constexpr Seconds operator""_ms(long double v) {
  return Seconds{static_cast<double>(v) * 1e-3};
}
constexpr Seconds operator""_ms(unsigned long long v) {
  return Seconds{static_cast<double>(v) * 1e-3};
}
constexpr Seconds operator""_us(long double v) {
  return Seconds{static_cast<double>(v) * 1e-6};
}
constexpr Seconds operator""_us(unsigned long long v) {
  return Seconds{static_cast<double>(v) * 1e-6};
}
constexpr Seconds operator""_ns(long double v) {
  return Seconds{static_cast<double>(v) * 1e-9};
}
constexpr Seconds operator""_ns(unsigned long long v) {
  return Seconds{static_cast<double>(v) * 1e-9};
}
// Rates: decimal prefixes, per direction.
constexpr BytesPerSecond operator""_MBps(long double v) {
  return BytesPerSecond{static_cast<double>(v) * 1e6};
}
constexpr BytesPerSecond operator""_MBps(unsigned long long v) {
  return BytesPerSecond{static_cast<double>(v) * 1e6};
}
constexpr BytesPerSecond operator""_GBps(long double v) {
  return BytesPerSecond{static_cast<double>(v) * 1e9};
}
constexpr BytesPerSecond operator""_GBps(unsigned long long v) {
  return BytesPerSecond{static_cast<double>(v) * 1e9};
}
constexpr BytesPerSecond operator""_TBps(long double v) {
  return BytesPerSecond{static_cast<double>(v) * 1e12};
}
constexpr BytesPerSecond operator""_TBps(unsigned long long v) {
  return BytesPerSecond{static_cast<double>(v) * 1e12};
}
constexpr FlopsPerSecond operator""_TFLOPps(long double v) {
  return FlopsPerSecond{static_cast<double>(v) * 1e12};
}
constexpr FlopsPerSecond operator""_TFLOPps(unsigned long long v) {
  return FlopsPerSecond{static_cast<double>(v) * 1e12};
}
constexpr FlopsPerSecond operator""_PFLOPps(long double v) {
  return FlopsPerSecond{static_cast<double>(v) * 1e15};
}
constexpr FlopsPerSecond operator""_PFLOPps(unsigned long long v) {
  return FlopsPerSecond{static_cast<double>(v) * 1e15};
}
}  // namespace literals

}  // namespace snsim

// fmt prints quantities the way to_string does: fmt::format("{}", 1_GiB) == "1 GiB".
#define SNSIM_UNIT_FORMATTER(T)                                                 \
  template <>                                                                   \
  struct fmt::formatter<snsim::T> : fmt::formatter<std::string> {               \
    auto format(snsim::T v, format_context& ctx) const -> decltype(ctx.out()) { \
      return fmt::formatter<std::string>::format(snsim::to_string(v), ctx);     \
    }                                                                           \
  };
SNSIM_UNIT_FORMATTER(Bytes)
SNSIM_UNIT_FORMATTER(Seconds)
SNSIM_UNIT_FORMATTER(BytesPerSecond)
SNSIM_UNIT_FORMATTER(Flops)
SNSIM_UNIT_FORMATTER(FlopsPerSecond)
#undef SNSIM_UNIT_FORMATTER
