#include "ellm/app/runtime.h"

#include <filesystem>
#include <system_error>

#include "ellm/app/generator_options.h"
#include "ellm/engine/gguf.h"
#include "ellm/pipelines/pipeline_processor.h"

namespace ellm::app {
namespace {

std::string Or(const std::string& value, const std::string& otherwise) {
  return value.empty() ? otherwise : value;
}

}  // namespace

StatusOr<pipelines::Processor*> Runtime::Find(const std::string& pipeline) const {
  pipelines::Processor* p = registry->Find(pipeline);
  if (p) return p;
  std::string names;
  for (const auto& n : registry->Names()) names += (names.empty() ? "" : ", ") + n;
  return NotFoundError("no pipeline '" + pipeline + "' in " + pipelines_dir + " (have: " + names +
                       ")");
}

StatusOr<std::unique_ptr<pipelines::ProcessorRegistry>> Runtime::LoadPipelines() const {
  ELLM_ASSIGN_OR_RETURN(auto specs, pipelines::LoadPipelineDirectory(pipelines_dir));
  auto fresh = std::make_unique<pipelines::ProcessorRegistry>();
  ELLM_RETURN_IF_ERROR(pipelines::RegisterPipelines(specs, generator.get(), extract, fresh.get()));
  return fresh;
}

StatusOr<std::unique_ptr<Runtime>> OpenRuntime(const Config& config,
                                               const RuntimeOverrides& overrides,
                                               RuntimeStage* failed) {
  RuntimeStage ignored;
  RuntimeStage& stage = failed ? *failed : ignored;
  auto rt = std::make_unique<Runtime>();
  rt->config = config;
  rt->model_path = Or(overrides.model_path, config.model.path);
  rt->store_path = Or(overrides.store_path, config.store.path);
  rt->pipelines_dir =
      Or(overrides.pipelines_dir, Or(config.pipelines.dir, pipelines::DefaultPipelinesDir()));

  // Files are checked before anything is created or loaded, so that a wrong
  // path costs nothing.
  if (overrides.without_model) {
    rt->model_path.clear();
    rt->model_architecture = "?";
  } else {
    stage = RuntimeStage::kModel;
    ELLM_ASSIGN_OR_RETURN(gguf::GgufFile model, gguf::GgufFile::Open(rt->model_path));
    auto arch = model.GetString("general.architecture");
    rt->model_architecture = arch.ok() ? std::string(*arch) : "?";
    rt->model_tensors = model.tensors().size();
  }

  stage = RuntimeStage::kExtractor;
  rt->extract = config.extract;
  ELLM_ASSIGN_OR_RETURN(rt->extract.extractor_path, ingest::FindExtractor(rt->extract));

  std::vector<pipelines::PipelineSpec> specs;
  if (!overrides.without_model) {
    stage = RuntimeStage::kPipelines;
    ELLM_ASSIGN_OR_RETURN(specs, pipelines::LoadPipelineDirectory(rt->pipelines_dir));
  }

  stage = RuntimeStage::kStore;
  store::JobStoreOptions store_options;
  store_options.max_attempts = config.jobs.max_attempts;
  ELLM_ASSIGN_OR_RETURN(rt->store, store::JobStore::Open(rt->store_path, store_options));

  if (overrides.without_model) {
    stage = RuntimeStage::kPipelines;
    rt->registry = std::make_unique<pipelines::ProcessorRegistry>();
    ELLM_RETURN_IF_ERROR(
        pipelines::RegisterPipelines({}, nullptr, rt->extract, rt->registry.get()));
    return rt;
  }

  stage = RuntimeStage::kEngine;
  pipelines::GeneratorOptions go = GeneratorOptionsFrom(config);
  if (!overrides.prefix_cache_dir.empty()) go.prefix_cache_dir = overrides.prefix_cache_dir;
  if (overrides.threads) go.engine.threads = static_cast<int>(*overrides.threads);
  if (overrides.context) go.session.n_ctx = *overrides.context;
  if (go.session.kv_memory_budget > 0) {
    std::error_code ec;  // a directory that cannot be made fails at the first spill, saying so
    std::filesystem::create_directories(go.session.spill_dir, ec);
  }
  ELLM_ASSIGN_OR_RETURN(rt->generator, pipelines::Generator::Load(rt->model_path, go));

  stage = RuntimeStage::kPipelines;
  rt->registry = std::make_unique<pipelines::ProcessorRegistry>();
  ELLM_RETURN_IF_ERROR(
      pipelines::RegisterPipelines(specs, rt->generator.get(), rt->extract, rt->registry.get()));
  return rt;
}

}  // namespace ellm::app
