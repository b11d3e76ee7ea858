// The one precompiled header shared by every ctrainer target (REUSE_FROM ctrainer).
// Heavy, stable headers only: anything here is parsed once per build instead of once per file.
#pragma once
#include <torch/torch.h>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
