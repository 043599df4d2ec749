#include "workloads/training/training.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "runtime/waits.hpp"
#include "sim/random.hpp"
#include "workloads/training/balancer.hpp"
#include "workloads/training/context.hpp"
#include "workloads/training/schedule.hpp"

namespace snsim::workloads::training {
namespace {

using models::CollectiveKind;

constexpr int MAX_STEPS = 100;  // keeps every op's tag (step, micro-batch, unit, pass) within an int
// Signal ids on the symmetric heap, one range per purpose; a local expert or a gradient bucket adds its index.
constexpr int TP_REDUCE = 1, TP_GATHER = 2, PP_FORWARD = 3, PP_BACKWARD = 4, MOE_COMBINE = 5, CP_RING = 6,
              TP_OVERLAP = 7;
constexpr int MOE_DISPATCH = 100;
constexpr int DP_REDUCE = 10000, DP_GATHER = 20000, EXPERT_REDUCE = 30000, EXPERT_GATHER = 40000;
constexpr int MAX_BUCKETS = 9999;
// Stream events of the interleaved pipeline (after the gradient buckets' 0..MAX_BUCKETS): a forward (+0) or backward
// (+1) done, a transfer for one received.
constexpr int P2P_DONE = 100000, P2P_RECEIVED = 100002;
// FSDP's: a unit's parameters gathered, its compute started (the next gather may go), its gradients complete.
constexpr int FSDP_GATHERED = 100004, FSDP_STARTED = 100005, FSDP_REDUCIBLE = 100006;
// PGAS reductions over at most this many ranks put every chunk straight to its owner; larger groups go around a
// ring. All-pairs puts are n(n-1) concurrent flows ending at different times, which SimGrid's exact max-min
// re-solves at every end (quadratic: docs/simgrid.md#speed); at 72 ranks a step took minutes. NCCL runs
// rings at that size too.
constexpr std::size_t MAX_DIRECT_GROUP = 8;
// Mixed-precision Adam reads and writes 12 B of fp32 state per parameter (master weight, m, v), reads its 2 B
// gradient and writes its 2 B parameter: 28 B of HBM traffic (the 16 B of state per parameter of Rajbhandari et
// al. 2020, "ZeRO", §3.1); its few FLOPs per parameter never bind.
constexpr double ADAM_BYTES_PER_PARAMETER = 28;
// The least a dispatch or combine put carries: the 8 B token count, when a rank sends an expert no token.
constexpr std::uint64_t COUNT_BYTES = 8;
// A put uses one issuing block per this many bytes, up to pgas.blocks (a block reaches ~10.6 GB/s on our H200s,
// validation/params/h200.yaml: 32 blocks fill an NVLink4 port's 450 GB/s x 0.785 efficiency).
constexpr std::uint64_t BYTES_PER_BLOCK = 64ull << 10;
// fp8's amaxes of one layer's forward: an fp32 each for the input and the weight of its 4 linear layers (QKV,
// projection, the MLP's two).
constexpr std::uint64_t AMAX_BYTES_PER_LAYER = 4 * 2 * 4;

/// What a Group carries: transfers that may run at once between the same ranks go by different communicators.
enum class Purpose { collective, context_ring, fsdp_gather, fsdp_reduce, amax };

/// One Group per set of ranks and purpose, shared by every member's ops (collectives and barriers match by Group
/// identity).
class Groups {
 public:
  Group get(const std::vector<int>& ranks, Purpose purpose = Purpose::collective) {
    auto [it, inserted] = cache_.try_emplace({purpose, ranks}, nullptr);
    if (inserted) it->second = std::make_shared<const std::vector<int>>(ranks);
    return it->second;
  }

 private:
  std::map<std::pair<Purpose, std::vector<int>>, Group> cache_;
};

/// Gradients that a stage reduces together, ready once the backward has gone below `low_unit`.
struct Bucket {
  int low_unit = 0;
  double dense_params = 0, expert_params = 0;  // on one rank
};

/// The stage's units in backward order (logits, layers from the last, embedding), cut into buckets of `plan.bucket`
/// gradient bytes.
std::vector<Bucket> buckets(const TrainingConfig& c, int stage) {
  const int layers = c.model.layers / c.plan.pp;
  const double grad = gradient_bytes(c.model);
  std::vector<Bucket> out;
  Bucket current;
  bool open = false;
  auto add = [&](int unit, double dense, double expert) {
    current.low_unit = unit;
    current.dense_params += dense;
    current.expert_params += expert;
    open = true;
    if ((current.dense_params + current.expert_params) * grad >= static_cast<double>(c.plan.bucket.count())) {
      out.push_back(current);
      current = {};
      open = false;
    }
  };
  if (stage == c.plan.pp - 1)
    add(layers + 1, logits_params(c.model, c.plan) + mtp_dense_params(c.model, c.plan),
        mtp_expert_params(c.model, c.plan));
  for (int l = layers; l >= 1; --l) {
    const int layer = global_layer(c.model, c.plan, stage, l - 1);
    add(l, dense_layer_params(c.model, c.plan, layer), expert_layer_params(c.model, c.plan, layer));
  }
  if (stage == 0) add(0, embedding_params(c.model, c.plan), 0);
  if (open) out.push_back(current);
  return out;
}

/// Why parallel.bucket changes nothing in this plan, when the scenario gives it (`set`: a bucket sweep would return
/// identical points): buckets are cut at layer boundaries (a layer's gradients are ready together), so a bucket at
/// most the smallest layer's gradient makes one bucket per layer however small it is, and one that holds a stage's
/// whole gradient makes one bucket however large it is. Not said for the default: most real layers are larger than
/// its 25 MiB, which the training model's reference states once (docs/reference/scenario.md).
std::vector<std::string> bucket_notes(const TrainingConfig& c, bool set) {
  if (!set) return {};
  const bool experts_reduced = c.model.moe && expert_dp_group(c.plan, 0).size() > 1;
  if (c.plan.dp * c.plan.cp == 1 && !experts_reduced)
    return {
        fmt::format("parallel.bucket {} changes nothing: no gradient is reduced across GPUs (dp 1)", c.plan.bucket)};
  const int layers = c.model.layers / c.plan.pp;
  const double grad = gradient_bytes(c.model);
  bool one_layer_each = true, one_bucket = true;
  double smallest_layer = std::numeric_limits<double>::infinity(), largest_stage = 0;
  for (int stage = 0; stage < c.plan.pp; ++stage) {
    const int units = layers + (stage == 0 ? 1 : 0) + (stage == c.plan.pp - 1 ? 1 : 0);
    const auto cut = buckets(c, stage);
    one_layer_each = one_layer_each && cut.size() == static_cast<std::size_t>(units);
    one_bucket = one_bucket && cut.size() == 1;
    double stage_total = 0;
    for (const auto& b : cut) stage_total += (b.dense_params + b.expert_params) * grad;
    largest_stage = std::max(largest_stage, stage_total);
    for (int l = 0; l < layers; ++l) {
      const int layer = global_layer(c.model, c.plan, stage, l);
      smallest_layer =
          std::min(smallest_layer,
                   (dense_layer_params(c.model, c.plan, layer) + expert_layer_params(c.model, c.plan, layer)) * grad);
    }
  }
  if (one_layer_each && layers > 0)
    return {
        fmt::format("parallel.bucket {} is at most one layer's gradient on a GPU (the smallest is {}): every "
                    "bucket is one layer, so a smaller bucket changes nothing",
                    c.plan.bucket, bytes_of(smallest_layer))};
  if (one_bucket)
    return {
        fmt::format("parallel.bucket {} holds a pipeline stage's whole gradient on a GPU ({}): one bucket, "
                    "reduced after the backward, so a larger bucket changes nothing",
                    c.plan.bucket, bytes_of(largest_stage))};
  return {};
}

/// The tokens of one MoE layer and micro-batch in one EP group: who sends how many to which expert.
struct MoeRoute {
  Routing placed;                       // placed[src][expert], src = place in the EP group
  std::vector<std::uint64_t> received;  // per expert: tokens it computes
  std::uint64_t slots = 0;              // BSP: capacity per expert per rank (the all_to_all's padded buffer)
  // BSP, dropless: the tokens the group's busiest rank sends to or receives from the others in one exchange.
  std::uint64_t busiest = 0;
};

/// Emits one rank's ops for the whole run.
class RankEmitter {
 public:
  RankEmitter(const Training& training, std::uint64_t seed, int rank, int phase, Groups& groups,
              std::map<std::tuple<int, int, int>, std::vector<MoeRoute>>& routes)
      : t_{training},
        c_{training.config()},
        seed_{seed},
        rank_{rank},
        me_{coord_of(c_.plan, rank)},
        phase_{phase},
        groups_{groups},
        routes_{routes},
        layers_{c_.model.layers / c_.plan.pp},
        buckets_{buckets(c_, me_.pp)},
        kernels_{layer_forward(c_.model, c_.plan, false)},
        moe_kernels_{c_.model.moe ? layer_forward(c_.model, c_.plan, true) : LayerForward{}},
        pgas_{c_.schedule == Schedule::pgas} {
    dp_ = groups_.get(dp_cp_group(c_.plan, rank));  // CP ranks hold the same weights
    if (c_.plan.cp > 1) {
      Coord next = me_, prev = me_;
      next.cp = (me_.cp + 1) % c_.plan.cp;
      prev.cp = (me_.cp + c_.plan.cp - 1) % c_.plan.cp;
      cp_next_ = rank_of(c_.plan, next);
      cp_prev_ = rank_of(c_.plan, prev);
    }
    tp_ = groups_.get(tp_group(c_.plan, rank));
    if (c_.plan.tp_overlap) {
      const auto& ring = *tp_;
      const auto at = static_cast<std::size_t>(std::ranges::find(ring, rank) - ring.begin());
      tp_next_ = ring[(at + 1) % ring.size()];
      tp_prev_ = ring[(at + ring.size() - 1) % ring.size()];
    }
    if (c_.model.moe) {
      ep_ = groups_.get(ep_group(c_.plan, rank));
      edp_ = groups_.get(expert_dp_group(c_.plan, rank));
      if (c_.plan.etp > 1) etp_ = groups_.get(etp_group(c_.plan, rank));
    }
    amax_ = groups_.get(
        [&] {
          std::vector<int> stage;
          for (int r = 0; r < c_.plan.gpus(); ++r)
            if (coord_of(c_.plan, r).pp == me_.pp) stage.push_back(r);
          return stage;
        }(),
        Purpose::amax);
    world_ = groups_.get([&] {
      std::vector<int> all(static_cast<std::size_t>(c_.plan.gpus()));
      std::iota(all.begin(), all.end(), 0);
      return all;
    }());
  }

  void run(std::vector<Op>& program) {
    for (step_ = 0; step_ < c_.steps; ++step_) emit_step(program);
  }

 private:
  // ---- plumbing ----------------------------------------------------------------------------------------------------

  OpInfo here(OpInfo::Pass pass, int mb = 0, int unit = 0) const { return {step_, mb, unit, pass}; }

  template <class T>
  void add(T what, const OpInfo& info) {
    out_->push_back(Op{std::move(what), phase_, t_.tag(info)});
  }

  /// A kernel. A training loop's host runs ahead of its GPU between the synchronisations at step boundaries (the
  /// loss read back, the optimizer's checks), so a kernel behind other work of its stream in this step is already
  /// queued when that work ends: it pays the device's queue gap (`pipelined`), not the host's launch. A kernel
  /// that opens its stream in a step (the main and gradient streams start afresh every step) was launched by a host
  /// that had just synchronised: it pays the launch.
  void compute(Kernel k, double scale, const OpInfo& info) {
    if (k.flops.count() <= 0 && k.bytes.count() == 0) return;
    const Dtype dtype = c_.model.dtype == Dtype::fp8 && !k.fp8 ? Dtype::bf16 : c_.model.dtype;
    const double byte_scale = scale == 2 ? k.backward : scale;
    ComputeOp c{Flops{k.flops.count() * scale}, bytes_of(static_cast<double>(k.bytes.count()) * byte_scale),
                std::nullopt, dtype};
    // A linear layer's forward (scale 1) or its backward's two GEMMs (scale 2), by shape.
    if (k.gemm && t_.by_shape() && (scale == 1 || scale == 2)) {
      auto& g = c.shape.emplace<models::Gemm>(*k.gemm);
      g.backward = scale == 2;
      c.flops = g.flops();
    }
    if (k.attention && t_.by_shape() && (scale == 1 || scale == 2)) {  // a whole pass (not a CP round's part)
      auto& a = c.shape.emplace<models::Attention>(*k.attention);
      a.backward = scale == 2;
      c.flops = a.flops();
    }
    c.memory = {k.memory, scale == 2};
    c.kernel = k.name.empty() ? models::to_string(k.memory) : k.name;
    // Autocast: the forward casts the linear layer's fp32 weight first (4 B read, 2 written per element), the
    // backward casts its weight gradient back to fp32 after it (2 read, 4 written).
    const bool cast = c_.model.autocast && k.gemm && (scale == 1 || scale == 2);
    const Bytes weight_cast =
        cast ? bytes_of(6.0 * static_cast<double>(k.gemm->m) * static_cast<double>(k.gemm->k)) : Bytes{0};
    if (cast && scale == 1) memory_kernel(weight_cast, models::MemoryKernel::stream, "cast", info);
    c.pipelined = !out_->empty();
    add(c, info);
    if (cast && scale == 2) memory_kernel(weight_cast, models::MemoryKernel::widen, "cast", info);
    // The bias gradient: column sums of the output's gradient.
    if (scale == 2 && k.bias_grad.count() > 0)
      memory_kernel(k.bias_grad, models::MemoryKernel::bias_grad, "bias_grad", info);
  }

  /// A memory-bound kernel a linear layer brings along (a weight's cast, a bias gradient), named `name` in the report.
  void memory_kernel(Bytes bytes, models::MemoryKernel kind, std::string_view name, const OpInfo& info) {
    ComputeOp op;
    op.bytes = bytes;
    op.memory = {kind, false};
    op.kernel = name;
    op.pipelined = !out_->empty();
    add(op, info);
  }

  void collective(CollectiveKind kind, Bytes bytes, const Group& group, const OpInfo& info, int root = -1) {
    CollectiveOp op;
    op.kind = kind;
    op.bytes = bytes;
    op.group = group;
    op.root = root >= 0 ? root : group->front();
    add(op, info);
  }

  /// Blocks issuing a put of `bytes`; each adds one to the target's signal (NVSHMEM: issuers x count).
  std::uint64_t blocks(Bytes bytes) const {
    return std::clamp<std::uint64_t>(bytes.count() / BYTES_PER_BLOCK, 1, static_cast<std::uint64_t>(c_.pgas_blocks));
  }

  void put(int to, Bytes bytes, int signal, const OpInfo& info) {
    const auto blocks = this->blocks(bytes);
    PutOp p;
    p.to = to;
    p.bytes = Bytes{(bytes.count() + blocks - 1) / blocks};
    p.scope = models::Scope::block;
    p.issuers = static_cast<int>(blocks);
    p.signal = signal;
    add(p, info);
  }

  void wait(int signal, std::uint64_t count, const OpInfo& info) {
    add(SignalWaitOp{signal, count, Compare::ge, true}, info);
  }

  /// Whether a PGAS reduction over `group` puts to every member directly (else around a ring).
  static bool direct(const Group& group) { return group->size() <= MAX_DIRECT_GROUP; }

  /// PGAS: one half of an all-reduce (to the owners: a reduce-scatter; from them: an all-gather). Directly, `chunk`
  /// to every other member with `signal`, then a wait for exactly the other members' chunks; around a ring, n - 1
  /// rounds of a put to the next member and a wait for the previous one's (what it forwards next round).
  void exchange(const Group& group, Bytes chunk, int signal, const OpInfo& info) {
    const std::size_t n = group->size();
    if (direct(group)) {
      for (int peer : *group)
        if (peer != rank_) put(peer, chunk, signal, info);
      wait(signal, (n - 1) * blocks(chunk), info);
      return;
    }
    const auto me = static_cast<std::size_t>(std::ranges::find(*group, rank_) - group->begin());
    for (std::size_t round = 0; round + 1 < n; ++round) {
      put((*group)[(me + 1) % n], chunk, signal, info);
      wait(signal, blocks(chunk), info);
    }
  }

  /// A tensor-parallel collective of `bytes` (nccl-tests' size: the whole activation).
  void tp(CollectiveKind kind, Bytes bytes, const OpInfo& info) {
    const auto n = static_cast<std::uint64_t>(c_.plan.tp);
    if (n == 1) return;
    if (!pgas_) return collective(kind, bytes, tp_, info);
    const Bytes chunk{bytes.count() / n};
    if (kind != CollectiveKind::all_gather) exchange(tp_, chunk, TP_REDUCE, info);
    if (kind != CollectiveKind::reduce_scatter) exchange(tp_, chunk, TP_GATHER, info);
  }

  Bytes activation() const {
    return bytes_of(static_cast<double>(c_.model.micro_batch) * c_.model.sequence / c_.plan.cp * c_.model.hidden *
                    activation_bytes(c_.model.dtype));
  }

  // ---- MoE -------------------------------------------------------------------------------------------------------

  /// The routing of model layer `model_layer` in EP group `block` of this rank's stage (ep_group_index; -1: this
  /// rank's own).
  const MoeRoute& route(int model_layer, int mb, int block = -1) {
    if (block < 0) block = ep_group_index(c_.plan, rank_);
    auto [it, inserted] = routes_.try_emplace({me_.pp, block, model_layer});
    if (inserted) {
      const auto& moe = *c_.model.moe;
      RandomStream pick(seed_, fmt::format("training.moe.popularity.layer{}", model_layer));
      const auto p = popularity(moe.experts, moe.skew, pick);
      const bool limited = moe.group_top_k < moe.groups;
      const GroupSubsets subsets = limited ? group_subsets(p, moe.groups, moe.group_top_k) : GroupSubsets{};
      RandomStream rng(seed_, fmt::format("training.moe.routing.layer{}.group{}", model_layer, block));
      for (int s = 0; s < c_.steps; ++s)
        for (int m = 0; m < c_.plan.micro_batches; ++m) {
          const Routing choices =
              limited ? route_limited(p, subsets, c_.plan.ep, routed_tokens(c_.model, c_.plan), moe.top_k, rng)
                      : route_choices(p, rng);
          MoeRoute r;
          if (pgas_) {
            // Dropless: an expert may take every choice of the group (capacity factor = experts).
            const double factor = moe.dropless ? static_cast<double>(moe.experts) : moe.capacity_factor;
            r.placed = balance(choices, factor, c_.threshold).placed;
          } else if (moe.dropless) {
            r.placed = choices;
            r.busiest = busiest_exchange(choices, moe.experts / c_.plan.ep);
          } else {
            r.placed = capacity_drop(choices, moe.capacity_factor, r.slots);
          }
          r.received.assign(static_cast<std::size_t>(moe.experts), 0);
          for (const auto& row : r.placed)
            for (std::size_t e = 0; e < row.size(); ++e) r.received[e] += row[e];
          it->second.push_back(std::move(r));
        }
    }
    return it->second[static_cast<std::size_t>(step_ * c_.plan.micro_batches + mb)];
  }

  Routing route_choices(const std::vector<double>& p, RandomStream& rng) const {
    return training::route(p, c_.plan.ep, routed_tokens(c_.model, c_.plan), c_.model.moe->top_k, rng);
  }

  /// Router, dispatch, experts, combine; in the backward the same exchanges carry gradients, the router last.
  void moe(int model_layer, int mb, bool backward, const OpInfo& info) {
    const auto& moe = *c_.model.moe;
    const MoeRoute& r = route(model_layer, mb);
    const double scale = backward ? 2 : 1;
    const double token_bytes = c_.model.hidden * models::element_size(c_.model.dtype);
    const int ep = c_.plan.ep, local = moe.experts / ep, mine = ep_rank(c_.plan, rank_), first = mine * local;
    if (!backward) compute(moe_kernels_.router, 1, info);
    if (!pgas_) {
      // The dispatch and combine: the capacity-padded buffer (experts x capacity tokens a rank), or dropless an
      // all-to-all-v, as long as its busiest rank's exchange: an all_to_all whose every rank moves what that one
      // sends or receives over its links (n - 1 of n shares of the buffer go to other ranks).
      const Bytes buffer =
          moe.dropless ? bytes_of(static_cast<double>(r.busiest) * token_bytes * ep / std::max(1, ep - 1))
                       : bytes_of(static_cast<double>(moe.experts) * static_cast<double>(r.slots) * token_bytes);
      if (ep > 1) collective(CollectiveKind::all_to_all, buffer, ep_, info);
      // Expert tensor parallelism (Megatron-Core's alltoall dispatcher): the ETP group's ranks, which hold the same
      // experts, gather the tokens each received for them (padded as the all-to-all moved them), run 1 / etp of
      // every expert's FFN on all of them and reduce-scatter the outputs back.
      const int etp = c_.plan.etp, group = ep_group_index(c_.plan, rank_);
      std::uint64_t tokens = 0;
      for (int k = 0; k < etp; ++k) {
        const MoeRoute& peer = etp > 1 ? route(model_layer, mb, group - group % etp + k) : r;
        for (int e = first; e < first + local; ++e) tokens += peer.received[static_cast<std::size_t>(e)];
      }
      const Bytes gathered =
          moe.dropless ? bytes_of(static_cast<double>(tokens) * token_bytes)
                       : bytes_of(static_cast<double>(etp * local * ep) * static_cast<double>(r.slots) * token_bytes);
      if (etp > 1) collective(CollectiveKind::all_gather, gathered, etp_, info);
      compute(expert_forward(c_.model, tokens, etp), scale, info);
      if (etp > 1) collective(CollectiveKind::reduce_scatter, gathered, etp_, info);
      if (ep > 1) collective(CollectiveKind::all_to_all, buffer, ep_, info);
    } else {
      auto tokens_bytes = [&](std::uint64_t n) {
        return Bytes{
            std::max(COUNT_BYTES, static_cast<std::uint64_t>(std::llround(static_cast<double>(n) * token_bytes)))};
      };
      const auto& group = *ep_;
      // The balancer reads the load counters (on the EP group's first rank) one-sidedly before it places tokens.
      if (ep > 1 && !backward && rank_ != group.front())
        add(GetOp{group.front(), Bytes{static_cast<std::uint64_t>(moe.experts) * COUNT_BYTES}, models::Scope::thread},
            info);
      if (ep > 1)
        for (int q = 0; q < ep; ++q)
          if (q != mine)
            for (int e = q * local; e < (q + 1) * local; ++e)
              put(group[static_cast<std::size_t>(q)],
                  tokens_bytes(r.placed[static_cast<std::size_t>(mine)][static_cast<std::size_t>(e)]),
                  MOE_DISPATCH + e - q * local, info);
      for (int e = first; e < first + local; ++e) {
        // Each expert starts as soon as its own tokens are in, whatever the others wait for.
        if (ep > 1) {
          std::uint64_t expected = 0;  // one per issuing block of every other rank's put to this expert
          for (int q = 0; q < ep; ++q)
            if (q != mine)
              expected += blocks(tokens_bytes(r.placed[static_cast<std::size_t>(q)][static_cast<std::size_t>(e)]));
          wait(MOE_DISPATCH + e - first, expected, info);
        }
        compute(expert_forward(c_.model, r.received[static_cast<std::size_t>(e)]), scale, info);
        if (ep > 1)
          for (int q = 0; q < ep; ++q)
            if (q != mine)
              put(group[static_cast<std::size_t>(q)],
                  tokens_bytes(r.placed[static_cast<std::size_t>(q)][static_cast<std::size_t>(e)]), MOE_COMBINE, info);
      }
      if (ep > 1) {
        std::uint64_t expected = 0;  // every other rank's experts send back what this rank dispatched to them
        for (int e = 0; e < moe.experts; ++e)
          if (e < first || e >= first + local)
            expected += blocks(tokens_bytes(r.placed[static_cast<std::size_t>(mine)][static_cast<std::size_t>(e)]));
        wait(MOE_COMBINE, expected, info);
      }
    }
    if (backward) compute(moe_kernels_.router, 2, info);
  }

  // ---- layers ----------------------------------------------------------------------------------------------------

  void layer(int layer, int mb, bool backward) {
    const OpInfo info = here(backward ? OpInfo::backward : OpInfo::forward, mb, layer + 1);
    whole_layer(global_layer(c_.model, c_.plan, me_.pp, layer), mb, backward, info);
  }

  /// DeepSeek-V3's multi-token-prediction module `depth` (ModelSpec::mtp_layers) on the last stage: the shifted
  /// tokens' embedding and the hidden state, each normed, projected from their concatenation, its layer, then the
  /// shared final norm, output head and loss; the backward in reverse, the embedding copy's gradient last.
  void mtp_module(int depth, int mb, bool backward, const OpInfo& info) {
    const Kernel projection = mtp_projection(c_.model, c_.plan);
    if (!backward) {
      compute(embedding_forward(c_.model, c_.plan), 1, info);
      compute(kernels_.norm, 1, info);
      compute(kernels_.norm, 1, info);
      compute(projection, 1, info);
      whole_layer(c_.model.layers + depth, mb, false, info);
      compute(kernels_.norm, 1, info);
      compute(logits_forward(c_.model, c_.plan), 1, info);
      compute(loss_forward(c_.model, c_.plan), 1, info);
      return;
    }
    compute(loss_forward(c_.model, c_.plan), 2, info);
    compute(logits_forward(c_.model, c_.plan), 2, info);
    compute(kernels_.norm, 2, info);
    whole_layer(c_.model.layers + depth, mb, true, info);
    compute(projection, 2, info);
    compute(kernels_.norm, 2, info);
    compute(kernels_.norm, 2, info);
    compute(embedding_grad(c_.model, c_.plan), 1, info);
  }

  /// Model layer `model_layer` forward or backward, as `layer` runs a stage's.
  void whole_layer(int model_layer, int mb, bool backward, const OpInfo& info) {
    // Full recomputation (Korthikanti et al. 2022 §5): the backward first runs the layer's forward again, its
    // collectives included, from the one input it kept.
    if (backward && c_.plan.recompute == Recompute::full) layer_pass(model_layer, mb, false, info);
    layer_pass(model_layer, mb, backward, info);
    // fp8 with delayed scaling (TransformerEngine's recipe, Megatron-Core's default): the forward's amaxes, an fp32
    // for the input and the weight of each of the layer's linear layers, are max-reduced over the stage's TP x CP
    // x DP ranks (Megatron-Core's amax reduction group) when the layer's fp8 region ends.
    if (!backward && c_.model.dtype == Dtype::fp8 && !pgas_ && amax_->size() > 1)
      collective(CollectiveKind::all_reduce, Bytes{AMAX_BYTES_PER_LAYER}, amax_, info);
  }

  /// Model layer `model_layer`'s forward or backward on one micro-batch.
  void layer_pass(int model_layer, int mb, bool backward, const OpInfo& info) {
    const bool sp = c_.plan.sequence_parallel && c_.plan.tp > 1;
    const bool moe = is_moe_layer(c_.model, model_layer);
    const Bytes act = activation();
    const auto& k = moe ? moe_kernels_ : kernels_;
    const Kernel& core = attention_window(c_.model, model_layer) > 0 ? k.local_attention : k.attention;
    // A MoE layer's shared experts are a tensor-parallel MLP beside the routed ones (none: no MLP kernels).
    const bool mlp = !moe || k.mlp_up.flops.count() > 0;
    // Megatron's f / g (Narayanan et al. 2021 §2.3): an all-reduce after each block forward and before each block
    // backward; with sequence parallelism an all-gather before and a reduce-scatter after (Korthikanti et al. §4.2).
    auto before = [&] {
      if (sp) tp(CollectiveKind::all_gather, act, info);
    };
    auto after = [&] { tp(sp ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, act, info); };
    // A GEMM with the all-gather before it (`gathered`) or the reduce-scatter after it: in turn, or overlapped chunk
    // by chunk (parallel.tp_overlap, which refuses autocast: no casts between them).
    const bool overlap = c_.plan.tp_overlap;
    auto gathered = [&](const Kernel& casts, const Kernel& gemm, double scale) {
      if (overlap) return tp_overlapped(gemm, scale, true, act, info);
      before();
      compute(casts, 1, info);
      compute(gemm, scale, info);
    };
    auto scattered = [&](const Kernel& gemm, double scale, const Kernel& casts) {
      if (overlap) return tp_overlapped(gemm, scale, false, act, info);
      compute(gemm, scale, info);
      compute(casts, 1, info);
      after();
    };
    if (!backward) {
      compute(k.norm, 1, info);
      gathered(k.input_casts, k.qkv, 1);
      for (const Kernel& rope : k.rope) compute(rope, 1, info);
      attention(core, false, info);
      scattered(k.projection, 1, Kernel{});
      compute(k.residual, 1, info);
      compute(k.norm, 1, info);
      if (mlp) {
        gathered(k.input_casts, k.mlp_up, 1);
        for (const Kernel& activation : k.activation) compute(activation, 1, info);
        scattered(k.mlp_down, 1, Kernel{});
      }
      if (moe) {
        this->moe(model_layer, mb, false, info);
        if (!sp) tp(CollectiveKind::all_gather, act, info);  // each TP rank routed its 1/tp of the tokens
      }
      compute(k.residual, 1, info);
      return;
    }
    if (moe) {
      if (!sp) tp(CollectiveKind::all_gather, act, info);
      this->moe(model_layer, mb, true, info);
    }
    if (mlp) {
      gathered(k.output_grad_casts, k.mlp_down, 2);
      for (const Kernel& activation : k.activation_grad) compute(activation, 2, info);
      compute(k.mlp_split, 1, info);
      scattered(k.mlp_up, 2, k.input_grad_casts);
    }
    compute(k.norm, 2, info);
    compute(k.residual_grad, 1, info);
    gathered(k.output_grad_casts, k.projection, 2);
    // Selective recomputation: the attention core's forward again, its s^2 scores not kept (§5).
    if (c_.plan.recompute == Recompute::selective) attention(core, false, info);
    attention(core, true, info);
    for (const Kernel& rope : k.rope_grad) compute(rope, 2, info);
    compute(k.qkv_split, 1, info);
    scattered(k.qkv, 2, k.input_grad_casts);
    compute(k.norm, 2, info);
    compute(k.residual_grad, 1, info);
  }

  /// TransformerEngine's ring-exchange overlap (Megatron-Core's tp_comm_overlap with sequence parallelism): the
  /// all-gather of `act` before a GEMM (`gather`) or the reduce-scatter after it, as tp rounds over the TP ring. Each
  /// round runs the GEMM on one 1 / tp chunk of the tokens beside one exchange of a 1 / tp chunk with the ring's
  /// neighbours (sent to the next, received from the previous), and the next round starts when both are done: the
  /// all-gather passes on the chunk just used (rounds 0 .. tp - 2 exchange), the reduce-scatter the partial sum of
  /// the previous chunk (rounds 1 .. tp - 1), whose add is fused into the GEMM's epilogue.
  void tp_overlapped(const Kernel& gemm, double scale, bool gather, Bytes act, const OpInfo& info) {
    const int t = c_.plan.tp;
    const Bytes chunk{act.count() / static_cast<std::uint64_t>(t)};
    Kernel piece = gemm;
    piece.flops = Flops{gemm.flops.count() / t};
    piece.bytes = Bytes{gemm.bytes.count() / static_cast<std::uint64_t>(t)};
    piece.bias_grad = Bytes{gemm.bias_grad.count() / static_cast<std::uint64_t>(t)};
    if (piece.gemm) piece.gemm->n = std::max<std::int64_t>(1, (piece.gemm->n + t - 1) / t);  // n: the tokens
    for (int round = 0; round < t; ++round) {
      if (gather ? round + 1 == t : round == 0) {
        compute(piece, scale, info);
        continue;
      }
      // the userbuffers' exchange: a put to the next rank, a wait for the previous one's
      beside_compute({[&] {
                       put(tp_next_, chunk, TP_OVERLAP, info);
                       wait(TP_OVERLAP, blocks(chunk), info);
                     }},
                     piece, scale, info);
    }
  }

  /// The attention core, forward (or its backward, twice the FLOPs). With context parallelism a ring over the CP
  /// group (workloads/training/context.hpp): cp rounds of 1 / cp of it, the first cp - 1 each beside the exchange of
  /// the next chunk's K and V (backward: with their gradients), which the next round waits for.
  void attention(const Kernel& k, bool backward, const OpInfo& info) {
    const double scale = backward ? 2 : 1;
    const int cp = c_.plan.cp;
    if (cp == 1) return compute(k, scale, info);
    const Bytes kv{ring_kv_bytes(c_.model, c_.plan).count() * (backward ? 2u : 1u)};
    for (int round = 0; round < cp; ++round) {
      if (round + 1 == cp) {
        compute(k, scale / cp, info);
        break;
      }
      if (pgas_) {
        put(cp_next_, kv, CP_RING, info);
        compute(k, scale / cp, info);
        wait(CP_RING, blocks(kv), info);
        continue;
      }
      beside_compute({[&] {
                        collective(CollectiveKind::broadcast, kv, groups_.get({rank_, cp_next_}, Purpose::context_ring),
                                   info, rank_);
                      },
                      [&] {
                        collective(CollectiveKind::broadcast, kv, groups_.get({cp_prev_, rank_}, Purpose::context_ring),
                                   info, cp_prev_);
                      }},
                     k, scale / cp, info);
    }
  }

  /// One StreamsOp: the op lists the `beside` functions emit, each on a stream of its own, beside the kernel `k` on
  /// the last stream, which is queued behind the layer's kernels before it, like them.
  void beside_compute(const std::vector<std::function<void()>>& beside, const Kernel& k, double scale,
                      const OpInfo& info) {
    std::vector<Op>* outer = out_;
    StreamsOp ops;
    ops.streams.resize(beside.size() + 1);
    for (std::size_t i = 0; i < beside.size(); ++i) {
      out_ = &ops.streams[i];
      beside[i]();
    }
    out_ = &ops.streams.back();
    compute(k, scale, info);
    if (!ops.streams.back().empty())
      if (auto* c = std::get_if<ComputeOp>(&ops.streams.back().front().what)) c->pipelined = !outer->empty();
    out_ = outer;
    out_->push_back(Op{std::move(ops), phase_, -1});
  }

  /// The units of the stage's chunk `chunk` (all its layers without interleaving): its layers, the embedding before
  /// the model's first chunk, the logits after its last.
  std::pair<int, int> chunk_units(int chunk) const {
    const int per_chunk = layers_ / c_.plan.vp;
    const bool first = me_.pp == 0 && chunk == 0, last = me_.pp == c_.plan.pp - 1 && chunk == c_.plan.vp - 1;
    return {first ? 0 : chunk * per_chunk + 1, last ? layers_ + 1 : (chunk + 1) * per_chunk};
  }

  void forward(int mb, int chunk = 0) {
    const auto [low, high] = chunk_units(chunk);
    for (int unit = low; unit <= high; ++unit) {
      const OpInfo info = here(OpInfo::forward, mb, unit);
      // ZeRO under PGAS: a bucket's parameters, gathered by the previous step's puts, are waited for here, at
      // their first use, and nowhere else.
      if (pgas_ && c_.plan.zero && step_ > 0 && mb == 0) gather_waits(unit, info);
      if (c_.plan.fsdp) fsdp_gather(unit, info);
      if (unit == 0)
        compute(embedding_forward(c_.model, c_.plan), 1, info);
      else if (unit == layers_ + 1) {
        // The final norm, its output cast for the logits under autocast.
        compute(kernels_.norm, 1, info);
        compute(kernels_.input_casts, 1, info);
        compute(logits_forward(c_.model, c_.plan), 1, info);
        compute(loss_cast(c_.model, c_.plan), 1, info);
        compute(loss_forward(c_.model, c_.plan), 1, info);
        for (int d = 0; d < c_.model.mtp_layers; ++d) mtp_module(d, mb, false, info);
      } else {
        layer(unit - 1, mb, false);
      }
    }
  }

  void backward(int mb, int chunk = 0) {
    const auto [low, high] = chunk_units(chunk);
    for (int unit = high; unit >= low; --unit) {
      const OpInfo info = here(OpInfo::backward, mb, unit);
      if (c_.plan.fsdp) fsdp_gather(unit, info);
      if (unit == 0)
        compute(embedding_grad(c_.model, c_.plan), 1, info);
      else if (unit == layers_ + 1) {
        for (int d = c_.model.mtp_layers - 1; d >= 0; --d) mtp_module(d, mb, true, info);
        compute(loss_forward(c_.model, c_.plan), 2, info);
        Kernel narrow = loss_cast(c_.model, c_.plan);
        narrow.memory = models::MemoryKernel::stream;  // the gradient cast back to `dtype`: a narrowing cast
        compute(narrow, 1, info);
        compute(logits_forward(c_.model, c_.plan), 2, info);
        compute(kernels_.input_grad_casts, 1, info);
        compute(kernels_.norm, 2, info);
      } else {
        layer(unit - 1, mb, true);
      }
      if (c_.plan.fsdp) fsdp_reduce(unit, info);
      // The last micro-batch's backward completes the gradients: tell stream 1 which bucket is ready.
      if (mb == c_.plan.micro_batches - 1 && reduces())
        for (std::size_t b = 0; b < buckets_.size(); ++b)
          if (buckets_[b].low_unit == unit) add(EventRecordOp{static_cast<int>(b)}, info);
    }
  }

  // ---- FSDP (ZeRO-3) -------------------------------------------------------------------------------------------

  /// The dense parameters of a unit on this rank, before FSDP shards them: the embedding, a layer's, the logits'.
  double unit_params(int unit) const {
    if (unit == 0) return embedding_params(c_.model, c_.plan);
    if (unit == layers_ + 1) return logits_params(c_.model, c_.plan) + mtp_dense_params(c_.model, c_.plan);
    return dense_layer_params(c_.model, c_.plan, global_layer(c_.model, c_.plan, me_.pp, unit - 1));
  }

  /// The unit's parameters all-gathered over DP x CP before its forward and again before its backward (resharded
  /// after each, as FSDP's reshard_after_forward), on a stream of their own: the gather of the next unit starts as
  /// soon as this one's compute does (FSDP's prefetch of one unit), and the compute waits for its own.
  void fsdp_gather(int unit, const OpInfo& info) {
    const Bytes bytes = gradient(unit_params(unit));
    if (bytes.count() == 0 || dp_->size() < 2) return;
    std::vector<Op>* compute_stream = out_;
    out_ = &fsdp_gathers_;
    if (fsdp_gathered_ > fsdp_gathered_at_step_) add(EventWaitOp{FSDP_STARTED, fsdp_gathered_}, info);
    collective(CollectiveKind::all_gather, bytes, groups_.get(*dp_, Purpose::fsdp_gather), info);
    add(EventRecordOp{FSDP_GATHERED}, info);
    out_ = compute_stream;
    add(EventWaitOp{FSDP_GATHERED, ++fsdp_gathered_}, info);
    add(EventRecordOp{FSDP_STARTED}, info);
  }

  /// The unit's gradients reduce-scattered over DP x CP once its backward is done, every micro-batch (each rank
  /// accumulates only its shard), on a stream of their own.
  void fsdp_reduce(int unit, const OpInfo& info) {
    const Bytes bytes = gradient(unit_params(unit));
    if (bytes.count() == 0 || dp_->size() < 2) return;
    add(EventRecordOp{FSDP_REDUCIBLE}, info);
    std::vector<Op>* compute_stream = out_;
    out_ = &fsdp_reductions_;
    add(EventWaitOp{FSDP_REDUCIBLE, ++fsdp_reduced_}, info);
    collective(CollectiveKind::reduce_scatter, bytes, groups_.get(*dp_, Purpose::fsdp_reduce), info);
    out_ = compute_stream;
  }

  // ---- pipeline ----------------------------------------------------------------------------------------------------

  enum class Comm { recv_forward, send_forward, recv_backward, send_backward };

  /// One pipeline transfer; nothing on the first (receive forward, send backward) or last stage (the others).
  void p2p(Comm what, int mb) {
    const bool first = me_.pp == 0, last = me_.pp == c_.plan.pp - 1;
    const bool forward = what == Comm::recv_forward || what == Comm::send_forward;
    const bool towards_next = what == Comm::send_forward || what == Comm::recv_backward;
    if ((towards_next && last) || (!towards_next && first)) return;
    Coord at = me_;
    at.pp += towards_next ? 1 : -1;
    const int peer = rank_of(c_.plan, at);
    const bool send = what == Comm::send_forward || what == Comm::send_backward;
    const OpInfo info = here(forward ? OpInfo::forward : OpInfo::backward, mb, towards_next ? layers_ : 1);
    stage_transfer(peer, send, forward, info, {std::min(rank_, peer), std::max(rank_, peer)});
  }

  /// The activation (forward) or its gradient (backward) of one micro-batch to or from the neighbouring stage `peer`:
  /// a put and its signal under PGAS; else NCCL send/recv, a broadcast rooted at the sender on `pair`'s communicator.
  void stage_transfer(int peer, bool send, bool forward, const OpInfo& info, const std::vector<int>& pair) {
    const Bytes bytes{activation().count() / static_cast<std::uint64_t>(c_.plan.tp)};
    const int signal = forward ? PP_FORWARD : PP_BACKWARD;
    if (pgas_) {
      if (send)
        put(peer, bytes, signal, info);
      else
        wait(signal, blocks(bytes), info);
      return;
    }
    collective(CollectiveKind::broadcast, bytes, groups_.get(pair), info, send ? rank_ : peer);
  }

  /// Two transfers at once (Megatron's batched send_forward_recv_backward): two streams under BSP, so that neither
  /// rendezvous waits for the other; under PGAS the put does not block, so one after the other.
  void p2p_pair(Comm a, int mb_a, Comm b, int mb_b) {
    if (pgas_) {
      p2p(a, mb_a);
      p2p(b, mb_b);
      return;
    }
    std::vector<Op>* outer = out_;
    StreamsOp both;
    both.streams.resize(2);
    out_ = &both.streams[0];
    p2p(a, mb_a);
    out_ = &both.streams[1];
    p2p(b, mb_b);
    out_ = outer;
    std::erase_if(both.streams, [](const auto& s) { return s.empty(); });
    if (both.streams.size() == 1)
      for (auto& op : both.streams.front()) out_->push_back(std::move(op));
    else if (both.streams.size() == 2)
      out_->push_back(Op{std::move(both), phase_, -1});
  }

  void pipeline() {
    const int m = c_.plan.micro_batches;
    if (c_.plan.vp > 1) return interleaved();
    if (c_.plan.pipeline == Pipeline::gpipe) {
      for (int i = 0; i < m; ++i) {
        p2p(Comm::recv_forward, i);
        forward(i);
        p2p(Comm::send_forward, i);
      }
      for (int i = 0; i < m; ++i) {
        p2p(Comm::recv_backward, i);
        backward(i);
        p2p(Comm::send_backward, i);
      }
      return;
    }
    // 1F1B (PipeDream-Flush), as megatron/core/pipeline_parallel/schedules.py runs it without interleaving.
    const int warmup = std::min(c_.plan.pp - me_.pp - 1, m), remaining = m - warmup;
    for (int i = 0; i < warmup; ++i) {
      p2p(Comm::recv_forward, i);
      forward(i);
      p2p(Comm::send_forward, i);
    }
    if (remaining > 0) p2p(Comm::recv_forward, warmup);
    for (int i = 0; i < remaining; ++i) {
      forward(warmup + i);
      p2p_pair(Comm::send_forward, warmup + i, Comm::recv_backward, i);
      backward(i);
      if (i == remaining - 1)
        p2p(Comm::send_backward, i);
      else
        p2p_pair(Comm::send_backward, i, Comm::recv_forward, warmup + i + 1);
    }
    for (int i = remaining; i < m; ++i) {
      p2p(Comm::recv_backward, i);
      backward(i);
      p2p(Comm::send_backward, i);
    }
  }

  /// Interleaved 1F1B (workloads/training/schedule.hpp): the stage's chunks in Megatron-Core's order. Activations go
  /// around the stages vp times, stage pp - 1's chunk c on to stage 0's chunk c + 1, and the gradients back.
  void interleaved() {
    const auto order = interleaved_order(c_.plan, me_.pp);
    if (pgas_) {  // a put does not wait for its target: each transfer where the schedule has it
      for (const auto& task : order) {
        if (receives(task)) chunk_transfer(task, false);
        task.forward ? forward(task.micro_batch, task.chunk) : backward(task.micro_batch, task.chunk);
        if (sends(task)) chunk_transfer(task, true);
      }
      return;
    }
    // NCCL: Megatron-Core's overlapped point-to-point (overlap_p2p_comm, on with interleaving): each send is posted
    // once its forward or backward is done, on a stream of its own, and the receive of the next forward (backward)
    // as soon as the previous forward (backward) is done, so that transfers run behind the other direction's compute.
    // The compute stream waits only for the receive it needs. One stream per direction and kind keeps each pair's
    // transfers in one order at both ends.
    std::vector<Op>* compute_stream = out_;
    std::array<std::vector<Op>, 4> side;  // send forward, send backward, receive forward, receive backward
    std::array<std::uint64_t, 2> done_at_start = {done_[0], done_[1]};
    const int warmup = interleaved_warmup(c_.plan, me_.pp);
    for (const auto& task : order) {
      const int dir = task.forward ? 0 : 1;
      const OpInfo info =
          here(task.forward ? OpInfo::forward : OpInfo::backward, task.micro_batch, chunk_units(task.chunk).first);
      if (receives(task)) {
        out_ = &side[2 + dir];
        // Posted once the previous task of its direction is done; the first backward's with the last warm-up
        // forward (Megatron's last warm-up iteration receives the first gradient).
        if (done_[dir] > done_at_start[dir])
          add(EventWaitOp{P2P_DONE + dir, done_[dir]}, info);
        else if (!task.forward)
          add(EventWaitOp{P2P_DONE, done_at_start[0] + static_cast<std::uint64_t>(warmup)}, info);
        chunk_transfer(task, false);
        add(EventRecordOp{P2P_RECEIVED + dir}, info);
        out_ = compute_stream;
        add(EventWaitOp{P2P_RECEIVED + dir, ++received_[dir]}, info);
      }
      task.forward ? forward(task.micro_batch, task.chunk) : backward(task.micro_batch, task.chunk);
      add(EventRecordOp{P2P_DONE + dir}, info);
      ++done_[dir];
      if (sends(task)) {
        out_ = &side[dir];
        add(EventWaitOp{P2P_DONE + dir, done_[dir]}, info);
        chunk_transfer(task, true);
        out_ = compute_stream;
      }
    }
    for (auto& stream : side)
      if (!stream.empty()) side_streams_.push_back(std::move(stream));
  }

  /// Whether a task takes its input from (gives its output to) another stage: all but the model's first chunk's
  /// forward and last chunk's backward receive, all but its last chunk's forward and first chunk's backward send.
  bool receives(const PipelineTask& task) const {
    return task.forward ? !(me_.pp == 0 && task.chunk == 0)
                        : !(me_.pp == c_.plan.pp - 1 && task.chunk == c_.plan.vp - 1);
  }
  bool sends(const PipelineTask& task) const {
    return task.forward ? !(me_.pp == c_.plan.pp - 1 && task.chunk == c_.plan.vp - 1)
                        : !(me_.pp == 0 && task.chunk == 0);
  }

  /// A task's activation (forward) or gradient (backward) from or to the neighbouring stage, around the ring of stages.
  void chunk_transfer(const PipelineTask& task, bool send) {
    const int pp = c_.plan.pp;
    const bool towards_next = task.forward == send;
    Coord at = me_;
    at.pp = (me_.pp + (towards_next ? 1 : pp - 1)) % pp;
    const int peer = rank_of(c_.plan, at);
    const auto [low, high] = chunk_units(task.chunk);
    const OpInfo info = here(task.forward ? OpInfo::forward : OpInfo::backward, task.micro_batch, send ? high : low);
    // Activations and gradients between the same two ranks go by different communicators (with two stages both
    // directions of a pair carry both), as Megatron's separate send and receive of each.
    const int sender = send ? rank_ : peer, receiver = send ? peer : rank_;
    stage_transfer(peer, send, task.forward, info,
                   task.forward ? std::vector{sender, receiver} : std::vector{receiver, sender});
  }

  // ---- gradients and the optimizer --------------------------------------------------------------------------------

  struct Part {
    Group group;
    double params;
    int reduce_signal, gather_signal;
  };

  std::vector<Part> parts(std::size_t b) const {
    std::vector<Part> out;
    const auto k = static_cast<int>(b);
    // FSDP reduces the dense gradients layer by layer itself (fsdp_reduce).
    if (!c_.plan.fsdp) out.push_back({dp_, buckets_[b].dense_params, DP_REDUCE + k, DP_GATHER + k});
    if (c_.model.moe) out.push_back({edp_, buckets_[b].expert_params, EXPERT_REDUCE + k, EXPERT_GATHER + k});
    return out;
  }

  static bool reduced(const Part& p) { return p.group->size() > 1 && p.params > 0; }

  bool reduces() const {
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      for (const auto& p : parts(b))
        if (reduced(p)) return true;
    return false;
  }

  Bytes gradient(double params) const { return bytes_of(params * gradient_bytes(c_.model)); }

  /// A member's share of a part of a bucket: what it owns in the reduce-scatter and sends in the all-gather.
  Bytes chunk(const Part& p) const { return Bytes{gradient(p.params).count() / p.group->size()}; }

  Kernel adam(double params) const {
    Kernel k{Flops{0}, bytes_of(params * ADAM_BYTES_PER_PARAMETER)};
    k.memory = models::MemoryKernel::adamw;
    return k;
  }

  void gather_waits(int unit, const OpInfo& info) {
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      if (buckets_[b].low_unit == unit)
        for (const auto& p : parts(b))
          if (reduced(p) && direct(p.group)) wait(p.gather_signal, (p.group->size() - 1) * blocks(chunk(p)), info);
  }

  /// Stream 1: each bucket's reduction once the backward has recorded its event.
  std::vector<Op> gradient_stream() {
    std::vector<Op> ops;
    std::vector<Op>* outer = out_;
    out_ = &ops;
    const OpInfo info = here(OpInfo::step_level);
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const auto ps = parts(b);
      if (std::ranges::none_of(ps, reduced)) continue;
      add(EventWaitOp{static_cast<int>(b), static_cast<std::uint64_t>(step_ + 1)}, info);
      for (const auto& p : ps) {
        if (!reduced(p)) continue;
        if (!pgas_) {
          collective(c_.plan.zero ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, gradient(p.params),
                     p.group, info);
          continue;
        }
        const auto n = static_cast<std::uint64_t>(p.group->size());
        const Bytes chunk = this->chunk(p);
        exchange(p.group, chunk, p.reduce_signal, info);
        if (c_.plan.zero) {  // this rank owns 1/n of the bucket: it updates it at once and sends it out
          compute(adam(p.params / static_cast<double>(n)), 1, info);
          if (direct(p.group)) {  // waited for where the next step first uses it
            for (int peer : *p.group)
              if (peer != rank_) put(peer, chunk, p.gather_signal, info);
          } else {
            exchange(p.group, chunk, p.gather_signal, info);
          }
        } else {
          exchange(p.group, chunk, p.gather_signal, info);
        }
      }
    }
    out_ = outer;
    return ops;
  }

  void optimizer() {
    const OpInfo info = here(OpInfo::step_level);
    double local = 0;  // parameters updated after the backward
    if (c_.plan.fsdp)  // the rank's shard of the dense parameters
      for (std::size_t b = 0; b < buckets_.size(); ++b)
        local += buckets_[b].dense_params / static_cast<double>(dp_->size());
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      for (const auto& p : parts(b)) {
        if (!reduced(p) || !c_.plan.zero)
          local += p.params;
        else if (!pgas_)
          local += p.params / static_cast<double>(p.group->size());
      }
    if (!pgas_ && c_.plan.gpus() > 1)  // the global gradient norm for clipping: every rank's partial sum
      collective(CollectiveKind::all_reduce, Bytes{8}, world_, info);
    compute(adam(local), 1, info);
    if (!pgas_ && c_.plan.zero)
      for (std::size_t b = 0; b < buckets_.size(); ++b)
        for (const auto& p : parts(b))
          if (reduced(p)) collective(CollectiveKind::all_gather, gradient(p.params), p.group, info);
  }

  void emit_step(std::vector<Op>& program) {
    std::vector<Op> main;
    out_ = &main;
    fsdp_gathered_at_step_ = fsdp_gathered_;
    pipeline();
    for (auto* fsdp : {&fsdp_gathers_, &fsdp_reductions_})
      if (!fsdp->empty()) side_streams_.push_back(std::exchange(*fsdp, {}));
    std::vector<Op> grads = reduces() ? gradient_stream() : std::vector<Op>{};
    out_ = &program;
    if (grads.empty() && side_streams_.empty()) {
      for (auto& op : main) program.push_back(std::move(op));
    } else {
      StreamsOp all;
      all.streams.push_back(std::move(main));
      if (!grads.empty()) all.streams.push_back(std::move(grads));
      for (auto& stream : side_streams_) all.streams.push_back(std::move(stream));
      side_streams_.clear();
      program.push_back(Op{std::move(all), phase_, -1});
    }
    optimizer();
    if (!pgas_) return;
    const OpInfo info = here(OpInfo::step_level);
    if (c_.plan.zero && step_ == c_.steps - 1)  // the last step's parameters must be in before the job ends
      for (std::size_t b = 0; b < buckets_.size(); ++b)
        for (const auto& p : parts(b))
          if (reduced(p) && direct(p.group)) wait(p.gather_signal, (p.group->size() - 1) * blocks(chunk(p)), info);
    add(QuietOp{}, info);
    if ((step_ + 1) % c_.resync_every == 0 && c_.plan.gpus() > 1)
      add(ShmemBarrierOp{world_, models::Scope::thread}, info);
  }

  const Training& t_;
  const TrainingConfig& c_;
  std::uint64_t seed_;
  int rank_;
  Coord me_;
  int phase_;
  Groups& groups_;
  std::map<std::tuple<int, int, int>, std::vector<MoeRoute>>& routes_;
  int layers_;
  std::vector<Bucket> buckets_;
  LayerForward kernels_, moe_kernels_;  // of a dense and of a MoE layer
  bool pgas_;
  Group dp_, tp_, ep_, etp_, edp_, world_, amax_;
  int tp_next_ = -1, tp_prev_ = -1;  // tp_overlap: the rank's neighbours on its TP ring
  int cp_next_ = 0, cp_prev_ = 0;    // ring attention's neighbours
  int step_ = 0;
  // Interleaved pipeline under BSP: the step's transfer streams, and per direction (forward, backward) the tasks
  // done and the transfers received so far in the run (the counts their events have reached).
  std::vector<std::vector<Op>> side_streams_;
  std::array<std::uint64_t, 2> done_{}, received_{};
  // FSDP: this step's gather and reduce-scatter streams, and the units gathered and reduced so far in the run.
  std::vector<Op> fsdp_gathers_, fsdp_reductions_;
  std::uint64_t fsdp_gathered_ = 0, fsdp_gathered_at_step_ = 0, fsdp_reduced_ = 0;
  std::vector<Op>* out_ = nullptr;  // the stream being emitted: this step's main or gradient stream, or the program
};

bool is_compute(std::string_view kind) {
  return kind == ComputeOp::KIND.name;
}
bool is_communication(std::string_view kind) {
  return kind == CollectiveOp::KIND.name || kind == CopyOp::KIND.name || kind == PutOp::KIND.name ||
         kind == GetOp::KIND.name || kind == QuietOp::KIND.name;
}

}  // namespace

Training::Training(TrainingConfig config, const Fabric& fabric) : config_{std::move(config)} {
  const auto& gpu = *fabric.device(fabric.gpus().front()).gpu;
  peak_ = *gpu.peak(config_.model.dtype);
  hbm_ = gpu.memory;
  by_shape_ = models::kernels_by_shape(gpu, config_.model.dtype);
  footprints_ = training::footprints(config_.model, config_.plan, config_.memory);
}

namespace {
const Footprint& largest(const std::vector<Footprint>& all) {
  return *std::ranges::max_element(all, {}, [](const Footprint& f) { return f.total().count(); });
}
}  // namespace

bool Training::fits() const {
  return largest(footprints_).total() <= hbm_;
}

std::optional<std::string> Training::outcome() const {
  if (fits() || config_.memory.allow_oversubscribe) return std::nullopt;
  const Footprint& f = largest(footprints_);
  return fmt::format(
      "does not fit: a GPU of pipeline stage {} needs {:.1f} GiB of its {:.1f} GiB HBM (weights {:.1f}, gradients "
      "{:.1f}, optimizer {:.1f}, activations {:.1f} for {} micro-batches, communication {:.1f}, overhead {:.1f}); "
      "memory.allow_oversubscribe: true simulates it anyway",
      f.stage, gib(f.total()), gib(hbm_), gib(f.weights), gib(f.gradients), gib(f.optimizer), gib(f.activations),
      f.in_flight, gib(f.communication), gib(f.overhead));
}

int Training::tag(const OpInfo& info) const {
  const int units = config_.model.layers / config_.plan.pp + 2;
  return ((info.step * config_.plan.micro_batches + info.micro_batch) * units + info.unit) * 3 +
         static_cast<int>(info.pass);
}

OpInfo Training::info(int tag) const {
  const int units = config_.model.layers / config_.plan.pp + 2;
  OpInfo i;
  i.pass = static_cast<OpInfo::Pass>(tag % 3);
  tag /= 3;
  i.unit = tag % units;
  tag /= units;
  i.micro_batch = tag % config_.plan.micro_batches;
  i.step = tag / config_.plan.micro_batches;
  return i;
}

void Training::emit(std::vector<Program>& programs, int phase, const std::vector<bool>& needed) const {
  if (outcome()) return;  // it does not fit: nothing runs
  Groups groups;
  std::map<std::tuple<int, int, int>, std::vector<MoeRoute>> routes;
  std::size_t last = 0;  // ops the rank emitted last added
  for (int r = 0; r < config_.plan.gpus(); ++r) {
    // A folded rank's program is its representative's (replicas_alike()); MoE draws routes as ranks are emitted, and
    // says its replicas are not alike, so every rank is needed there.
    if (!needed.empty() && !needed[static_cast<std::size_t>(r)]) continue;
    auto& ops = programs[static_cast<std::size_t>(r)].ops;
    // Sized up front, a program is written once instead of regrown (at 128 GPUs the regrowth's copies and fresh
    // pages took about a tenth of a GPT-3 step's run time, and doubling left a third of the memory unused). The same
    // position in the first data-parallel replica (a lower rank, emitted already) runs as many ops, give or take a
    // MoE layer's routes; in that replica, the rank emitted before (its tensor-parallel neighbour, or the previous
    // stage's) about as many.
    std::size_t expected = last;
    if (auto c = coord_of(config_.plan, r); c.dp > 0) {
      c.dp = 0;
      expected = programs[static_cast<std::size_t>(rank_of(config_.plan, c))].ops.size();
    }
    const std::size_t before = ops.size();
    ops.reserve(before + expected);
    RankEmitter(*this, seed_, r, phase, groups, routes).run(ops);
    last = ops.size() - before;
  }
}

Replicas Training::replicas() const {
  const auto& p = config_.plan;
  Replicas out;
  out.ranks.resize(static_cast<std::size_t>(p.dp));
  for (int d = 0; d < p.dp; ++d)
    for (int pp = 0; pp < p.pp; ++pp)
      for (int cp = 0; cp < p.cp; ++cp)
        for (int tp = 0; tp < p.tp; ++tp) out.ranks[static_cast<std::size_t>(d)].push_back(rank_of(p, {tp, d, pp, cp}));
  return out;
}

std::vector<Table> Training::summarize(const RankRecords& records, int phase) const {
  const auto& c = config_;
  const int gpus = c.plan.gpus();
  double start = 1e300;
  std::vector<double> step_end(static_cast<std::size_t>(c.steps), 0);
  std::vector<std::vector<std::pair<Seconds, Seconds>>> compute(static_cast<std::size_t>(gpus)),
      busy(static_cast<std::size_t>(gpus));
  std::map<std::string, double> moved;
  struct KernelTotal {
    double launches = 0, seconds = 0, bytes = 0;
  };
  // By kernel name and pass, over every rank. The simulated ranks' records alone, each weighing as many ranks as it
  // stands for (RankRecords::simulated): a folded rank's records are its representative's, and its rows below are
  // made from its representative's spans.
  const Folding& folding = records.folding();
  std::map<std::pair<std::string_view, OpInfo::Pass>, KernelTotal> by_kernel;
  std::map<int, double> kernel_ranks;  // by simulated rank: the ranks it stands for
  for (const auto& r : records.simulated()) {
    if (r.phase != phase) continue;
    const double weight = 1.0 + static_cast<double>(folding.mirrors(r.rank).size());
    if (is_compute(r.kind)) {
      const auto pass = r.tag >= 0 ? info(r.tag).pass : OpInfo::step_level;
      auto& total = by_kernel[{r.kernel.empty() ? std::string_view("other") : r.kernel, pass}];
      kernel_ranks[r.rank] = weight;
      total.launches += weight;
      total.seconds += weight * (r.end - r.start).count();
      total.bytes += weight * static_cast<double>(r.bytes.count());
    }
    start = std::min(start, r.start.count());
    if (r.tag >= 0) {
      auto& end = step_end[static_cast<std::size_t>(info(r.tag).step)];
      end = std::max(end, r.end.count());
    }
    const auto span = std::pair{r.start, r.end};
    if (is_compute(r.kind)) compute[static_cast<std::size_t>(r.rank)].push_back(span);
    if (is_compute(r.kind) || is_communication(r.kind)) busy[static_cast<std::size_t>(r.rank)].push_back(span);
    if (is_communication(r.kind) && r.kind != QuietOp::KIND.name)
      moved[std::string(r.kind)] += weight * static_cast<double>(r.bytes.count());
  }
  Table memory{fmt::format("training memory per GPU by pipeline stage (GiB; HBM {:.1f} GiB)", gib(hbm_)),
               {"stage", "params_m", "weights", "gradients", "optimizer", "activations", "in_flight", "communication",
                "overhead", "total", "fits"},
               {}};
  for (const auto& f : footprints_)
    memory.rows.push_back({f.stage, f.params / 1e6, gib(f.weights), gib(f.gradients), gib(f.optimizer),
                           gib(f.activations), f.in_flight, gib(f.communication), gib(f.overhead), gib(f.total()),
                           f.total() <= hbm_});
  const Footprint& peak_stage = largest(footprints_);
  auto memory_rows = [&](Table& summary) {
    auto row = [&](const char* name, nlohmann::json value) { summary.rows.push_back({name, std::move(value)}); };
    row("peak_hbm_gib", gib(peak_stage.total()));
    row("hbm_capacity_gib", gib(hbm_));
    row("fits", fits() ? 1 : 0);
    row("weights_gib", gib(peak_stage.weights));
    row("gradients_gib", gib(peak_stage.gradients));
    row("optimizer_gib", gib(peak_stage.optimizer));
    row("activations_gib", gib(peak_stage.activations));
    row("communication_gib", gib(peak_stage.communication));
    row("overhead_gib", gib(peak_stage.overhead));
  };
  if (start > 1e299) {  // nothing ran (it does not fit): the memory figures alone
    Table summary{std::string(SUMMARY_TABLE), {"metric", "value"}, {}};
    summary.rows.push_back({"gpus", gpus});
    memory_rows(summary);
    return {summary, memory};
  }
  for (std::size_t s = 1; s < step_end.size(); ++s) step_end[s] = std::max(step_end[s], step_end[s - 1]);
  const double flops = step_model_flops(c.model, c.plan).count();
  const double peak = peak_.count() * gpus;
  Table steps{fmt::format("training steps ({}): model FLOPs per step {:.4g} TFLOP, {} GPUs at {:.4g} TFLOP/s peak",
                          c.schedule == Schedule::bsp ? "bsp" : "pgas", flops / 1e12, gpus, peak_.count() / 1e12),
              {"step", "end_ms", "time_ms", "mfu_pct"},
              {}};
  double total = 0;
  for (std::size_t s = 0; s < step_end.size(); ++s) {
    const double time = step_end[s] - (s == 0 ? start : step_end[s - 1]);
    total += time;
    steps.rows.push_back({static_cast<int>(s), (step_end[s] - start) * 1e3, time * 1e3, 100 * flops / (time * peak)});
  }
  const double mean = total / c.steps, last = step_end.back() - (c.steps > 1 ? step_end[step_end.size() - 2] : start);
  const double run = step_end.back() - start;
  Table per_gpu{"training: time per GPU over all steps (busy = in compute or communication; idle = the rest)",
                {"rank", "tp", "dp", "pp", "compute_ms", "comm_only_ms", "idle_ms", "not_computing_pct"},
                {}};
  double busy_sum = 0, compute_sum = 0, idle_max = 0;
  // A folded rank's times are its representative's: each covered once (8,192 ranks of 23,000 spans each, sorted).
  std::unordered_map<std::size_t, std::pair<double, double>> covered_by_rank;
  for (int r = 0; r < gpus; ++r) {
    const auto spans_of = static_cast<std::size_t>(folding.representative(r));
    auto [times, fresh] = covered_by_rank.try_emplace(spans_of);
    if (fresh) times->second = {covered(compute[spans_of]).count(), covered(busy[spans_of]).count()};
    const auto [in_compute, in_any] = times->second;
    const double idle = std::max(0.0, run - in_any);
    const Coord co = coord_of(c.plan, r);
    per_gpu.rows.push_back({r, co.tp, co.dp, co.pp, in_compute * 1e3, (in_any - in_compute) * 1e3, idle * 1e3,
                            100 * (1 - in_compute / run)});
    busy_sum += in_any;
    compute_sum += in_compute;
    idle_max = std::max(idle_max, idle);
  }
  Table summary{std::string(SUMMARY_TABLE), {"metric", "value"}, {}};
  auto row = [&](const char* name, nlohmann::json value) { summary.rows.push_back({name, std::move(value)}); };
  row("schedule", c.schedule == Schedule::bsp ? "bsp" : "pgas");
  row("gpus", gpus);
  row("steps", c.steps);
  row("step_mean_ms", mean * 1e3);
  row("step_last_ms", last * 1e3);
  row("model_tflop_per_step", flops / 1e12);
  row("mfu_pct", 100 * flops / (mean * peak));
  // Throughput in sequences: the global batch (micro_batch x micro_batches x dp) per mean step.
  row("samples_per_s", static_cast<double>(c.model.micro_batch) * c.plan.micro_batches * c.plan.dp / mean);
  row("compute_ms_per_gpu", compute_sum / gpus * 1e3);
  row("comm_only_ms_per_gpu", (busy_sum - compute_sum) / gpus * 1e3);
  row("idle_ms_per_gpu", (run * gpus - busy_sum) / gpus * 1e3);
  // What a GPU spends not computing, whichever schedule: BSP waits inside its collectives, PGAS in signal waits.
  row("not_computing_ms_per_gpu", (run * gpus - compute_sum) / gpus * 1e3);
  row("idle_ms_max", idle_max * 1e3);
  for (std::string_view kind : {CollectiveOp::KIND.name, CopyOp::KIND.name, PutOp::KIND.name, GetOp::KIND.name})
    row(fmt::format("bytes_{}", kind).c_str(), moved[std::string(kind)]);
  memory_rows(summary);
  // What the compute time is made of, kernel by kernel, to set beside a profiled step's kernels.
  Table kernels{"training: compute time per GPU and step by kernel (mean GPU; launch and queue gaps included)",
                {"kernel", "pass", "launches", "time_ms", "pct_of_compute", "tb_per_s"},
                {}};
  std::vector<std::pair<std::pair<std::string_view, OpInfo::Pass>, KernelTotal>> ordered(by_kernel.begin(),
                                                                                         by_kernel.end());
  std::ranges::stable_sort(ordered, std::greater{}, [](const auto& k) { return k.second.seconds; });
  double kernel_seconds = 0;
  for (const auto& k : ordered) kernel_seconds += k.second.seconds;
  double ranks_with_kernels = 0;
  for (const auto& [rank, weight] : kernel_ranks) ranks_with_kernels += weight;
  const double per = std::max(ranks_with_kernels, 1.0) * c.steps;
  constexpr std::array<const char*, 3> pass_names{"forward", "backward", "step"};
  for (const auto& [key, sum] : ordered)
    kernels.rows.push_back({std::string(key.first), pass_names[static_cast<std::size_t>(key.second)],
                            sum.launches / per, sum.seconds / per * 1e3,
                            kernel_seconds > 0 ? 100 * sum.seconds / kernel_seconds : 0.0,
                            sum.seconds > 0 ? sum.bytes / sum.seconds / 1e12 : 0.0});
  return {steps, summary, per_gpu, kernels, memory};
}

std::unique_ptr<Training> make_training(const ConfigNode& node, const Fabric& fabric) {
  TrainingConfig c;
  const auto schedule = node.optional<std::string>("schedule", "bsp");
  if (schedule != "bsp" && schedule != "pgas")
    node.fail_key("schedule", fmt::format("expected bsp or pgas, found '{}'", schedule));
  c.schedule = schedule == "bsp" ? Schedule::bsp : Schedule::pgas;
  c.steps = node.optional<int>("steps", 2);
  check_between(node, "steps", c.steps, 1, MAX_STEPS);
  const ConfigNode model = node.child("model");
  c.model = parse_model(model, fabric);
  const ConfigNode parallel = node.section("parallel");
  c.plan = parse_plan(parallel, model, c.model, fabric);
  if (c.plan.fsdp && c.schedule == Schedule::pgas)
    parallel.fail_key("fsdp", "FSDP's per-layer gathers are NCCL collectives: needs schedule bsp");
  if (c.plan.tp_overlap && c.schedule == Schedule::pgas)
    parallel.fail_key("tp_overlap", "overlaps NCCL's sequence-parallel collectives: needs schedule bsp");
  if (c.plan.etp > 1 && c.schedule == Schedule::pgas)
    parallel.fail_key("etp", "expert tensor parallelism's token gathers are NCCL collectives: needs schedule bsp");
  const ConfigNode pgas = node.section("pgas");
  c.pgas_blocks = pgas.optional<int>("blocks", 32);
  check_between(pgas, "blocks", c.pgas_blocks, 1, 1024);
  c.threshold = pgas.optional<double>("threshold", 1.0);
  check_between(pgas, "threshold", c.threshold, 0.0, 1000.0);
  c.resync_every = pgas.optional<int>("resync_every", 4);
  check_between(pgas, "resync_every", c.resync_every, 1, MAX_STEPS);
  const ConfigNode memory = node.section("memory");
  c.memory.framework_overhead = memory.optional<Bytes>("framework_overhead", c.memory.framework_overhead);
  check_between(memory, "framework_overhead", c.memory.framework_overhead, Bytes{0}, Bytes{1ull << 50});
  c.memory.communicator_buffers = memory.optional<Bytes>("communicator_buffers", c.memory.communicator_buffers);
  check_between(memory, "communicator_buffers", c.memory.communicator_buffers, Bytes{0}, Bytes{1ull << 40});
  c.memory.allow_oversubscribe = memory.optional<bool>("allow_oversubscribe", false);
  for (int stage = 0; stage < c.plan.pp; ++stage)
    if (const auto n = buckets(c, stage).size(); n > MAX_BUCKETS)
      parallel.fail_key(
          "bucket",
          fmt::format("cuts a stage's gradients into {} buckets; at most {}: use a larger bucket", n, MAX_BUCKETS));
  auto notes = bucket_notes(c, parallel.maybe_child("bucket").has_value());
  auto training = std::make_unique<Training>(std::move(c), fabric);
  for (auto& note : notes) training->add_note(std::move(note));
  return training;
}

}  // namespace snsim::workloads::training

namespace snsim::workloads {

WorkloadRegistry::Entry training_entry() {
  return {
      "training",
      "transformer training steps (dense or MoE) over DP / TP / PP / EP, per layer, as BSP collectives or PGAS "
      "puts with signals",
      {{"schedule", "bsp|pgas", "bsp", "NCCL collectives and barriers, or one-sided puts with signals"},
       {"steps", "count", "2", "training steps, 1-100"},
       {"model.preset", "name", "", "start from a named model (`model: NAME` alone takes it as published)"},
       {"model.layers", "count", "", "transformer layers"},
       {"model.hidden", "count", "", "hidden size h"},
       {"model.heads", "count", "", "attention (query) heads, split over tp"},
       {"model.kv_heads", "count", "heads", "key and value heads: heads (MHA), fewer (GQA), 1 (MQA)"},
       {"model.head_dim", "count", "hidden / heads", "per-head dimension"},
       {"model.ffn_hidden", "count", "4 x hidden", "dense MLP hidden size"},
       {"model.mlp", "gelu|squared_relu|swiglu|geglu", "gelu", "MLP activation (gated: three matrices)"},
       {"model.norm", "layernorm|rmsnorm", "layernorm", "normalisation (its weights)"},
       {"model.rotary", "bool", "false", "rotary position embeddings on Q and K"},
       {"model.rope", "fused|eager", "fused",
        "RoPE as one fused kernel or HF's eager rotate_half (five kernels on Q and on K, nine backward)"},
       {"model.causal", "bool", "true",
        "causal attention (a decoder's); false: every token attends to all (an encoder's)"},
       {"model.glu", "fused|eager", "fused",
        "a gated MLP's activation as one fused kernel or PyTorch's eager act(gate) * up on the chunked gate/up output"},
       {"model.autocast", "bool", "false",
        "PyTorch AMP: fp32 parameters, each linear layer's weight cast in every forward, its gradient cast back; "
        "the residual stream, norms and loss in fp32"},
       {"model.tied_embeddings", "bool", "false", "the logits reuse the input embedding"},
       {"model.linear_bias", "bool", "false", "the blocks' linear layers have biases (their gradients' kernels)"},
       {"model.dropout", "bool", "false", "dropout after attention and MLP (memory: its masks)"},
       {"model.sequence", "tokens", "", "sequence length s"},
       {"model.vocabulary", "tokens", "50304", "vocabulary V (GPT-2's, padded)"},
       {"model.micro_batch", "sequences", "1", "sequences per micro-batch"},
       {"model.micro_batches", "count", "pp", "micro-batches per step and pipeline (or global_batch)"},
       {"model.global_batch", "sequences", "", "sequences per step: micro_batch x micro_batches x dp"},
       {"model.dtype", "bf16|fp16|fp8|tf32|fp32|fp64", "bf16", "number format of the GEMMs (the GPU's peak)"},
       {"model.attention", "flash|unfused", "flash", "FlashAttention, or the s^2 scores through HBM"},
       {"model.mtp_layers", "count", "0",
        "multi-token prediction (DeepSeek-V3): modules after the last layer, each a projection, a layer and the output "
        "head's pass"},
       {"model.sliding_window.tokens", "tokens", "",
        "sliding-window attention: a query attends to this many keys up to its own (causal only)"},
       {"model.sliding_window.global_every", "count", "0",
        "every k-th layer (k-1, 2k-1, ...) attends to all keys instead; 0: every layer local"},
       {"model.mla.q_lora_rank", "count", "0", "multi-head latent attention: Q's latent rank (0: none)"},
       {"model.mla.kv_lora_rank", "count", "", "K and V's shared latent rank"},
       {"model.mla.qk_nope_head_dim", "count", "", "per-head QK dimension without rotary"},
       {"model.mla.qk_rope_head_dim", "count", "", "the decoupled rotary QK dimension"},
       {"model.mla.v_head_dim", "count", "", "per-head V dimension"},
       {"model.moe.experts", "count", "", "routed experts per MoE layer"},
       {"model.moe.top_k", "count", "2", "experts per token"},
       {"model.moe.ffn_hidden", "count", "ffn_hidden", "each expert's FFN hidden size (fine-grained experts)"},
       {"model.moe.shared_experts", "count", "0", "experts every token goes through"},
       {"model.moe.dense_layers", "count", "0", "the first layers keep a dense MLP"},
       {"model.moe.every", "layers", "1", "after those, every k-th layer is MoE"},
       {"model.moe.capacity_factor", "ratio", "1.25", "an expert's capacity: factor x tokens x top_k / experts"},
       {"model.moe.groups", "count", "1",
        "group-limited routing: the experts in this many groups of consecutive ones (DeepSeek's n_group)"},
       {"model.moe.group_top_k", "count", "groups",
        "the groups a token picks (topk_group) before its top_k experts among theirs"},
       {"model.moe.dropless", "bool", "false",
        "no capacity (Megatron-Core's default): every choice computed, the all-to-all carrying what was routed"},
       {"model.moe.skew", "Zipf exponent", "0", "expert popularity skew (0 uniform), drawn per layer"},
       {"parallel.tp", "GPUs", "1", "tensor parallel (innermost ranks)"},
       {"parallel.pp", "stages", "1", "pipeline parallel (outermost)"},
       {"parallel.dp", "replicas", "GPUs / (tp x cp x pp)", "data parallel; tp x cp x pp x dp = GPUs"},
       {"parallel.tp_overlap", "bool", "false",
        "sequence parallelism's all-gathers and reduce-scatters as ring exchanges beside their GEMMs, chunk by chunk "
        "(TransformerEngine's tp_comm_overlap; bsp)"},
       {"parallel.ep", "GPUs", "1", "expert parallel, within a stage's tp x cp x dp ranks"},
       {"parallel.etp", "GPUs", "1",
        "expert tensor parallel: each expert's FFN split etp ways, its tokens gathered over the etp ranks (bsp)"},
       {"parallel.pipeline", "1f1b|gpipe", "1f1b", "pipeline schedule"},
       {"parallel.vp", "chunks", "1", "interleaved 1F1B: model chunks per pipeline stage (pp x vp divides layers)"},
       {"parallel.cp", "GPUs", "1", "context parallel: ring attention over s / cp tokens per GPU (2 cp divides s)"},
       {"parallel.sequence_parallel", "bool", "false", "TP reduce-scatter / all-gather instead of all-reduce"},
       {"parallel.recompute", "none|selective|full", "none", "activation recomputation in the backward"},
       {"parallel.zero", "bool", "false", "distributed optimizer: reduce-scatter gradients, all-gather parameters"},
       {"parallel.fsdp", "bool", "false",
        "FSDP (ZeRO-3): parameters sharded over DP x CP, gathered per layer with prefetch (BSP only)"},
       {"parallel.bucket", "bytes", "25MiB", "gradient bucket (PyTorch DDP bucket_cap_mb)"},
       {"memory.framework_overhead", "bytes", "0", "per GPU: CUDA context, workspaces, fragmentation"},
       {"memory.communicator_buffers", "bytes", "128MiB", "NCCL buffers per communicator"},
       {"memory.allow_oversubscribe", "bool", "false", "simulate a plan that does not fit in HBM"},
       {"pgas.blocks", "count", "32", "thread blocks issuing a large put"},
       {"pgas.threshold", "ratio", "1.0", "MoE balancer: keep the router's expert below threshold x mean load"},
       {"pgas.resync_every", "steps", "4", "a shmem_barrier over all ranks every K steps"}},
      [](const ConfigNode& node, const Fabric& fabric) -> std::unique_ptr<Workload> {
        return training::make_training(node, fabric);
      }};
}

}  // namespace snsim::workloads
