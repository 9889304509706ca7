// The engine settings of a configuration, as the pipelines' generator takes
// them: one mapping shared by every front door (through OpenRuntime).
#pragma once

#include "ellm/app/config.h"
#include "ellm/pipelines/generator.h"

namespace ellm::app {

// REQUIRES: config validated.
pipelines::GeneratorOptions GeneratorOptionsFrom(const Config& config);

}  // namespace ellm::app
