#include "workloads/replay/trace_file.hpp"

#include <zlib.h>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/files.hpp"

namespace snsim::workloads::replay {

std::string inflate_trace(std::string raw, const std::string& file) {
  if (raw.size() < 2 || static_cast<unsigned char>(raw[0]) != 0x1f || static_cast<unsigned char>(raw[1]) != 0x8b)
    return raw;
  auto fail = [&](const std::string& why) {
    throw_input_error({file, 0, 0}, "", fmt::format("truncated or corrupt gzip data ({})", why));
  };
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) fail("zlib cannot start");
  z.next_in = reinterpret_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  std::string out;
  char buffer[1 << 16];
  int status = Z_OK;
  while (status == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    status = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > MAX_INPUT_FILE.count()) {
      inflateEnd(&z);
      throw_input_error({file, 0, 0}, "",
                        fmt::format("inflates to more than {}, the most snsim reads from one file", MAX_INPUT_FILE));
    }
    if (status == Z_BUF_ERROR && z.avail_in == 0) break;  // the input ended before the stream did
  }
  const std::string message = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (status == Z_BUF_ERROR)
    fail(fmt::format("the file ends after {} bytes inflated, before the end of the gzip stream", out.size()));
  if (status != Z_STREAM_END) fail(message.empty() ? fmt::format("zlib status {}", status) : message);
  return out;
}

void fail_trace(const std::string& file, const std::string& message) {
  throw_input_error({file, 0, 0}, "", message);
}

}  // namespace snsim::workloads::replay
