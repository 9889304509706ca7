#include "ellm/app/generator_options.h"

namespace ellm::app {

pipelines::GeneratorOptions GeneratorOptionsFrom(const Config& config) {
  pipelines::GeneratorOptions o;
  o.engine = config.model.engine;
  o.session = config.model.session;
  o.prefix_cache_dir = config.kv.prefix_cache_dir;
  o.prefix_cache_bytes = static_cast<uint64_t>(config.kv.prefix_cache_mib) << 20;
  return o;
}

}  // namespace ellm::app
