// Named models (`model: llama3.1-8b`, or `model: {preset: llama3.1-70b, layers: 4}` to override any key), each
// from its published configuration; presets.cpp cites the source of every one, docs/training.md lists them with
// their sizes.
#pragma once

#include <string>
#include <string_view>

#include "workloads/training/model.hpp"

namespace snsim::workloads::training {

/// The preset of that name, or nullptr.
const ModelSpec* find_preset(std::string_view name);
/// "deepseek-v3, gpt3-175b, ...", for messages.
std::string preset_names();

}  // namespace snsim::workloads::training
