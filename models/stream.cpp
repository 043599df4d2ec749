#include "models/stream.hpp"

namespace snsim::models {
namespace {

// [unverified default: a few microseconds through the driver]; `snsim calibrate` fits it from ce_peer_bidir.
constexpr double EVENT_WAIT_US = 4.0;

std::unique_ptr<Model> make(const ConfigNode& node) {
  auto m = std::make_unique<StreamModel>();
  m->event_wait = node.optional<Seconds>("event_wait", Seconds{EVENT_WAIT_US * 1e-6});
  if (m->event_wait < Seconds{0}) node.fail_key("event_wait", fmt::format("must be >= 0, got {}", m->event_wait));
  return m;
}
}  // namespace

Registry<Model>::Entry stream_model_entry() {
  return {"stream",
          "CUDA stream mechanics: a stream waiting on another GPU's event",
          {
              {"event_wait", "time", "4us", "cross-GPU event wait until the stream resumes"},
          },
          make};
}

}  // namespace snsim::models
