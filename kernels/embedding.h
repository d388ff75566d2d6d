// Token and position embeddings of a GPT, in FP32 (as autocast leaves nn.Embedding):
//   forward   out[r, :] = wte[tokens[r], :] + wpe[r mod T, :]          r = b·T + t
//   backward  dwte[v, :] += Σ_{r : tokens[r] = v} dout[r, :]           (in increasing r)
//             dwpe[t, :] += Σ_b dout[b·T + t, :]                       (in increasing b)
// Deterministic, without float atomics: the backward first sorts the positions by token
// (a stable counting sort: integer counts only), then sums each token's rows in position order,
// so every run - and the CPU reference - adds in the same order.
#pragma once

#include <cstdint>

namespace ht {

// A token id outside [0, vocab) is never an index (as cross-entropy's labels): the kernels make its
// row NaN in the forward, which the step's non-finite check reports, and give it no gradient; the
// reference throws naming the row and the id. (The data readers refuse such ids first.)
struct EmbeddingArgs {
  const std::int32_t* tokens = nullptr;  // (rows) i32, each in [0, vocab)
  std::int64_t rows = 0;                 // B·T
  std::int64_t seq = 0;                  // T: position of row r is r mod T
  std::int64_t channels = 0;             // C
  const float* wte = nullptr;            // (vocab, C) fp32
  const float* wpe = nullptr;            // (>= T, C) fp32
  float* out = nullptr;                  // (rows, C) fp32
  std::int64_t vocab = 0;                // wte's rows
};
void embedding_ref(const EmbeddingArgs& a);

struct EmbeddingBackwardArgs {
  const std::int32_t* tokens = nullptr;  // (rows) i32
  std::int64_t rows = 0, seq = 0, channels = 0;
  std::int64_t vocab = 0;
  const float* dout = nullptr;           // (rows, C) fp32
  float* dwte = nullptr;                 // (vocab, C) fp32, added to
  float* dwpe = nullptr;                 // (>= T, C) fp32, added to
  std::int32_t* scratch = nullptr;       // (embedding_scratch_ints(rows, vocab)) i32
};
void embedding_backward_ref(const EmbeddingBackwardArgs& a);

// The sort's room: the positions in token order, each token's first position and a cursor, for
// every token and one bucket more (the ids outside the vocabulary, which get no gradient).
constexpr std::int64_t embedding_scratch_ints(std::int64_t rows, std::int64_t vocab) { return rows + 2 * (vocab + 2); }

}  // namespace ht
