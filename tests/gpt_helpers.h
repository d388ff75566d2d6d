// A small GPT and a small text to train it on, for the tests: the text is written once per test
// process from a fixed seed (no dependency on the Shakespeare corpus scripts/setup.sh builds).
#pragma once

#include "data/dataset.h"
#include "engine/rng.h"
#include "tests/helpers.h"
#include "train/train_config.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ht::test {

// About 30 000 characters of word salad over a fixed word list (words, spaces, punctuation,
// newlines; two non-ASCII letters), the same in every run.
inline std::string gpt_test_text_path() {
  static const std::string path = [] {
    const std::filesystem::path p = unique_temp_path("halftape-gpt-text") += ".txt";
    const char* words[] = {"the", "king", "and", "queen", "of", "Denmark", "speak", "now", "O", "r\xc3\xa9gime", "wh\xc3\xbd", "to",
                           "be", "or", "not", "that", "is", "question", "my", "lord", "HAMLET:", "fair", "love", "night"};
    Rng rng(2024);
    std::string text;
    while (text.size() < 30000) {
      text += words[rng.below(std::size(words))];
      const std::uint64_t r = rng.below(20);
      text += r == 0 ? ".\n" : (r == 1 ? ", " : " ");
    }
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }();
  return path;
}

inline std::vector<std::string> gpt_test_text_vocab() { return load_text(gpt_test_text_path(), "test").text.vocab; }

inline TrainConfig gpt_config(Precision precision) {
  TrainConfig c;
  c.device = DeviceChoice::cpu;
  c.precision = precision;
  c.data = "text:" + gpt_test_text_path();
  c.model.kind = "gpt";
  c.model.gpt = {.n_layer = 1, .n_head = 2, .n_embd = 32, .block_size = 16};
  c.batch_size = 4;
  c.steps = 4;
  c.log_every = 1;
  c.eval_every = 0;
  c.eval_windows = 16;
  c.eval_batch_size = 8;
  c.progress_bar = false;
  c.schedule.kind = LrSchedule::constant;
  c.schedule.base_lr = 3e-3f;
  c.optimizer.adamw.weight_decay = 0.1f;
  return c;
}

}  // namespace ht::test
