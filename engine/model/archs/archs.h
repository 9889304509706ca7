// One accessor per registered family; defined in archs/<family>.cc.
#pragma once

#include "model/arch_spec.h"

namespace ellm::model {

const ArchSpec& Gemma3Spec();
const ArchSpec& GraniteSpec();
const ArchSpec& LlamaSpec();
const ArchSpec& Phi3Spec();
const ArchSpec& Qwen2Spec();
const ArchSpec& Qwen3Spec();

}  // namespace ellm::model
