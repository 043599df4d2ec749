// How collective traffic is timed (`models.fabric`): every transfer its own flow (exact), or aggregated flows where
// that changes the time little and the wall time a lot (three fast paths, each measured against exact by tests).
//
// Crossbar fast path (all-peers collectives inside one non-blocking switch domain).
//
// The exact path gives every transfer its own SimGrid flow, shared max-min: a round of a jittered all-to-all on 72
// GPUs is 5,112 coupled flows that end at distinct times, and every end re-solves them (docs/simgrid.md#speed:
// seconds per round at 72 GPUs, O(flows^2)). Inside a crossbar domain (Fabric::crossbar_domains: every member reaches
// every other through the same switch planes, which the platform does not model as links) only the members' ports
// can bind, so the crossbar fast path moves a GPU's transfers of one round as two flows: everything it sends, over
// its HBM and up-link, and everything it receives, over its down-link and HBM (Simulation::crossbar_flow). A port
// then drains at its own rate, as a Birkhoff-von Neumann schedule of the round would (its time is the larger of its
// egress and ingress totals over the port's bandwidth); max-min per transfer can leave a port idle when its peers'
// ports bind instead, which the fast path does not see. Rate caps per transfer (fewer channels than links, protocol
// caps) become one cap per port that lets the port's largest transfer end when it would alone. Jitter draws, byte
// accounting and latencies are those of the exact path, transfer by transfer; tests measure the error against it.
//
// Ring fast path (ring collectives: all_reduce, all_gather, reduce_scatter). A ring runs S steps; in each, every rank
// pays the ring's step latency and sends one transfer to the next rank, and a step starts only when both neighbours
// have ended the previous one. A 512-rank ring all-reduce is 1,022 such steps per rank, 4.2M transfers for the 8 rails
// of a 4,096-GPU superpod, each step's transfers coupled through the GPUs' HBM links, and every step end re-solves
// them. Without per-transfer jitter every step of a rank moves the same bytes at the same latency, so the fast path
// moves a rank's S steps as one flow of S times the bytes (same per-transfer rate cap) after S times the latency,
// between the same neighbours, with the ring's members starting together and ending together (barriers). A lone
// ring then takes exactly what the exact path gives: the exact path's step s on a rank waits for the ranks within s
// hops, so S >= n/2 steps end at the last arrival + S x (latency + step bytes / rate) on every rank. What it does not
// see: a step's transfers that end early do not hand their bandwidth to the ring's slower ones step by step (only once
// their own flow ends), and traffic from outside the ring meets the latencies all first and the bytes after. With
// jitter each step of the exact path is paced by its slowest draw (a sum of maxima, not a maximum of sums), and a
// failure mid-ring changes the rates of the steps after it: rings keep the exact path under transfer jitter and in
// runs with fabric failures (link, plane, tray, degraded), whatever the path setting.
//
// Send fast path (a broadcast between 2 ranks: NCCL's send/recv, how pipeline stages and context-parallel rings pass
// activations). The exact path pipelines a broadcast in chunks (512 KiB, up to 128), each a transfer, so that a chain
// of ranks forwards chunk k while chunk k+1 arrives. Between 2 ranks nothing is forwarded and the receiver takes one
// chunk at a time: the chunks run back to back, each starting at the rate the one before ended with. One transfer of
// all the chunks' bytes after the same latency takes the same time, to rounding, whatever else shares its links. A
// Llama-class step with pipeline and context parallelism sends hundreds of thousands of chunks (3x the wall time).
// Per-transfer jitter draws and failures mid-transfer act chunk by chunk: sends keep the exact path under them, and
// under `exact`.
//
//   models:
//     fabric: {path: auto}   # auto | exact | fast
#pragma once

#include <string_view>

#include "models/model.hpp"

namespace snsim::models {

enum class FabricPath {
  automatic,  // fast where it applies and changes anything: all-peers collectives of 3 or more ranks in one domain;
              // rings of 3 or more ranks and 2-rank broadcasts without transfer jitter in a run without fabric failures
  exact,      // every transfer its own flow
  fast,       // as automatic, 2 ranks included
};

std::string_view to_string(FabricPath path);

class FabricModel final : public Model {
 public:
  FabricPath path = FabricPath::automatic;
};

/// The parameters of models.fabric, declared once.
const ParamTable<FabricModel>& fabric_params();
Registry<Model>::Entry fabric_model_entry();

}  // namespace snsim::models
