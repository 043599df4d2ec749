#include "models/models.hpp"

namespace snsim::models {

void register_models(Registry<Model>& registry) {
  registry.add(copy_model_entry());
  registry.add(compute_model_entry());
  registry.add(collective_model_entry());
  registry.add(stream_model_entry());
  registry.add(jitter_model_entry());
  registry.add(variation_model_entry());
  registry.add(slow_model_entry());
  registry.add(pgas_model_entry());
  registry.add(uvm_model_entry());
  registry.add(fabric_model_entry());
}

namespace {
template <class T>
std::shared_ptr<const T> build(const Registry<Model>& registry, const ConfigNode& section, const std::string& name) {
  std::shared_ptr<Model> model = registry.create(name, section.section(name));
  return std::dynamic_pointer_cast<const T>(model);
}
}  // namespace

Models Models::load(const ConfigNode& section) {
  Registry<Model> registry("model");
  register_models(registry);
  return {build<CopyModel>(registry, section, "copy"),
          build<ComputeModel>(registry, section, "compute"),
          build<CollectiveModel>(registry, section, "collective"),
          build<StreamModel>(registry, section, "stream"),
          build<JitterModel>(registry, section, "jitter"),
          build<VariationModel>(registry, section, "variation"),
          build<SlowModel>(registry, section, "slow"),
          build<PgasModel>(registry, section, "pgas"),
          build<UvmModel>(registry, section, "uvm"),
          build<FabricModel>(registry, section, "fabric")};
}

}  // namespace snsim::models
