// The one place that names the models halftape can train: the names --model accepts, the flags
// each model adds to `halftape train`, the training recipe each defaults to, and how each is
// made - from a spec and the data, or from what a checkpoint recorded of one.
#pragma once

#include "engine/task.h"
#include "models/model.h"
#include "models/spec.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ht {

std::vector<std::string> model_names();

// Registers --model and every model's own flags on `command`, writing into `spec`.
void add_model_flags(CLI::App* command, ModelSpec& spec);

// The flags only one model reads, each with that model's name (--hidden: "mlp"); a run of
// another model refuses them rather than ignore them.
struct ModelFlag {
  std::string flag, model;
};
std::vector<ModelFlag> model_only_flags();

// A flag a model's training recipe sets when the command line does not (nor `unless`, a flag
// that takes its place: --epochs for --steps). The MLP's recipe is halftape's defaults; the
// GPT's is nanoGPT's recipe for a small character model.
struct RecipeFlag {
  std::string flag, value, unless;
};
std::vector<RecipeFlag> recipe_flags(const std::string& kind);

// The named shapes --preset gives (llm.c's and nanoGPT's GPT-2 family: gpt2, gpt2-medium,
// gpt2-large, gpt2-xl), as the flags they stand for; a flag the command line gives wins.
std::vector<std::string> preset_names();
std::vector<RecipeFlag> preset_flags(const std::string& preset);

// Throws naming the flag when the spec cannot make a model (e.g. --n-embd not divisible by --n-head).
void validate_model(const ModelSpec& spec);

// Makes the model and registers its parameters in `arena` (not yet allocated). Throws when the
// data does not suit it (a GPT needs text, an MLP features).
std::unique_ptr<Model> make_model(const ModelSpec& spec, const TaskInfo& task, ParamArena& arena);

// The spec a model's config() describes (checkpoints record it); throws naming `what`.
ModelSpec spec_from_config(const nlohmann::json& config, const std::string& what);

}  // namespace ht
