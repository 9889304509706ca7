// The engine settings of a daemon configuration, as the pipelines'
// generator takes them: one mapping shared by ellmd and the ellm CLI.
#pragma once

#include "config.h"
#include "ellm/pipelines/generator.h"

namespace ellm::daemon {

// REQUIRES: config validated (kv_type is one of the accepted names).
pipelines::GeneratorOptions GeneratorOptionsFrom(const Config& config);

}  // namespace ellm::daemon
