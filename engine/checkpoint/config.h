// TrainConfig <-> JSON, for a checkpoint's __metadata__ "config" (and anything else that records
// a run). Every field that shapes the network, the game or the algorithm is written, so a
// checkpoint alone is enough to rebuild the run; paths are kept for the record only.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/train_config.h"

namespace grpo {

nlohmann::ordered_json config_to_json(const TrainConfig& c);
// Reads what config_to_json wrote; a missing or mistyped field throws UsageError naming it.
// Does not validate ranges (call c.validate()).
TrainConfig config_from_json(const nlohmann::json& j);

}  // namespace grpo
