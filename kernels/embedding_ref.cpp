#include "kernels/embedding.h"

#include "ground/error.h"

#include <vector>

namespace ht {

namespace {

void check_ids(const std::int32_t* tokens, std::int64_t rows, std::int64_t vocab) {
  for (std::int64_t r = 0; r < rows; ++r)
    HT_CHECK(tokens[r] >= 0 && tokens[r] < vocab, "embedding: the token of row {} is {}, outside the {} ids [0, {})", r, tokens[r],
             vocab, vocab);
}

}  // namespace

void embedding_ref(const EmbeddingArgs& a) {
  check_ids(a.tokens, a.rows, a.vocab);
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const float* te = a.wte + static_cast<std::int64_t>(a.tokens[r]) * a.channels;
    const float* pe = a.wpe + (r % a.seq) * a.channels;
    for (std::int64_t c = 0; c < a.channels; ++c) a.out[r * a.channels + c] = te[c] + pe[c];
  }
}

void embedding_backward_ref(const EmbeddingBackwardArgs& a) {
  check_ids(a.tokens, a.rows, a.vocab);
  // Positions sorted by token, stably (the order the GPU kernel sums in).
  std::vector<std::int64_t> start(static_cast<std::size_t>(a.vocab + 1), 0);
  for (std::int64_t r = 0; r < a.rows; ++r) ++start[static_cast<std::size_t>(a.tokens[r]) + 1];
  for (std::int64_t v = 0; v < a.vocab; ++v) start[static_cast<std::size_t>(v + 1)] += start[static_cast<std::size_t>(v)];
  std::vector<std::int64_t> cursor(start.begin(), start.end() - 1), order(static_cast<std::size_t>(a.rows));
  for (std::int64_t r = 0; r < a.rows; ++r) order[static_cast<std::size_t>(cursor[static_cast<std::size_t>(a.tokens[r])]++)] = r;
  for (std::int64_t v = 0; v < a.vocab; ++v) {
    const std::int64_t b = start[static_cast<std::size_t>(v)], e = start[static_cast<std::size_t>(v + 1)];
    if (b == e) continue;
    for (std::int64_t c = 0; c < a.channels; ++c) {
      float sum = 0;
      for (std::int64_t i = b; i < e; ++i) sum += a.dout[order[static_cast<std::size_t>(i)] * a.channels + c];
      a.dwte[v * a.channels + c] += sum;
    }
  }
  const std::int64_t batches = a.rows / a.seq;
  for (std::int64_t t = 0; t < a.seq; ++t)
    for (std::int64_t c = 0; c < a.channels; ++c) {
      float sum = 0;
      for (std::int64_t b = 0; b < batches; ++b) sum += a.dout[(b * a.seq + t) * a.channels + c];
      a.dwpe[t * a.channels + c] += sum;
    }
}

}  // namespace ht
