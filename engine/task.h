// The contract between data/ and models/, which are peers and do not know each other: what a
// data set feeds a model and asks it to predict. The trainer connects the two.
//
// Both tasks are classification over rows: an image classifier's rows are its samples, a
// language model's rows are the B·T positions of its windows, each predicting the next token.
// So the loss (softmax cross-entropy) and the evaluation are the same code for both.
#pragma once

#include "engine/tensor.h"

#include <cstdint>
#include <string>

namespace ht {

enum class InputKind { features, tokens };

struct TaskInfo {
  InputKind input = InputKind::features;
  std::int64_t features = 0;       // features: values per sample
  std::int64_t classes = 0;        // what each row predicts: a label, or the next token (the vocabulary)
  std::int64_t max_sequence = 0;   // tokens: the longest window (+1) the shortest split allows
};

// One batch as a model reads it, on the device.
struct Batch {
  Tensor input;    // features: (rows, features) compute dtype; tokens: (B, T) i32 ids
  Tensor targets;  // (rows) i32: each sample's class, or each position's next token
  std::int64_t rows = 0;
};

}  // namespace ht
