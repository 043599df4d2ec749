// A tiny JSON writer: the probe must build with nothing beyond CUDA, NCCL and NVSHMEM, so no JSON library.
//
// It writes compact, single-line JSON (one trace record per line) and takes care of commas itself. Strings are
// escaped per RFC 8259; bytes >= 0x80 pass through untouched (the probe only writes UTF-8 or ASCII).
// Non-finite numbers, which JSON cannot express, are written as null.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace probe {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(double number);
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(bool flag);
  JsonWriter& null();
  // Inserts already-serialised JSON (e.g. a fragment produced by another process) as one value.
  JsonWriter& raw(std::string_view json);

  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }
  JsonWriter& number_array(const std::vector<double>& numbers);
  JsonWriter& int_array(const std::vector<int>& numbers);

  const std::string& str() const { return out_; }

  static std::string escape(std::string_view text);

 private:
  void before_value();

  std::string out_;
  // One entry per open container: true once it holds a member, so the next one needs a comma.
  std::vector<bool> has_member_;
  bool after_key_ = false;
};

}  // namespace probe
