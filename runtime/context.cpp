#include "runtime/context.hpp"

#include "program/program.hpp"
#include "sim/interned.hpp"

namespace snsim::workloads {

RunContext::RunContext(Simulation& simulation, const models::Models& models, std::size_t ranks, std::uint64_t seed)
    : simulation_{simulation},
      models_{models},
      variability_{*models.jitter, *models.variation, *models.slow, simulation.fabric(), seed},
      records_(ranks) {
  // Installed only when something is drawn, so that the nominal path stays a plain sleep and send.
  TransferJitter jitter;
  if (!models.jitter->latency.is_none())
    jitter.latency = [this](DeviceId issuer) { return variability_.latency_factor(issuer); };
  if (!models.jitter->bandwidth.is_none())
    jitter.bandwidth = [this](DeviceId issuer) { return variability_.bandwidth_factor(issuer); };
  simulation_.set_jitter(std::move(jitter));
}

DeviceId RunContext::device(int rank) const {
  return rank == HOST ? *simulation_.fabric().host() : simulation_.fabric().gpus()[static_cast<std::size_t>(rank)];
}

void RunContext::sleep_for(Seconds t) {
  simulation_.delay(t);
}

void RunContext::hold_sms(int rank) {
  if (rank != HOST) simulation_.hold_sms(device(rank));
}

void RunContext::release_sms(int rank) {
  if (rank != HOST) simulation_.release_sms(device(rank));
}

void RunContext::record(OpRecord record) {
  // The caller's label and detail may be temporaries (a label just formatted): the record keeps the stored copies.
  // Its kind is an op kind's static name.
  record.label = interned(record.label);
  record.detail = interned(record.detail);
  records_[static_cast<std::size_t>(record.rank)].push_back(record);
}

}  // namespace snsim::workloads
