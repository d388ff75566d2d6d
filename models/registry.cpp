// The half of the registry that makes models (registry_flags.cpp holds the flags and checks).
#include "models/registry.h"

#include "models/gpt.h"
#include "models/mlp.h"

namespace ht {

std::unique_ptr<Model> make_model(const ModelSpec& spec, const TaskInfo& task, ParamArena& arena) {
  validate_model(spec);
  if (spec.kind == "gpt") {
    HT_CHECK(task.input == InputKind::tokens, "--model gpt reads text (--data shakespeare or text:FILE), not samples");
    return std::make_unique<Gpt>(spec.gpt, task.classes, arena);
  }
  HT_CHECK(task.input == InputKind::features, "--model mlp reads samples (--data fashion-mnist, idx:DIR, synthetic), not "
           "text; for text use --model gpt");
  return std::make_unique<Mlp>(spec.mlp, task.features, task.classes, arena);
}

}  // namespace ht
