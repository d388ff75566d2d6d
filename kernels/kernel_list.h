// Every kernel the engine calls through a Backend, as X(name, ArgumentStruct). From this one
// list come Backend's virtual `name(const Args&)`, the CPU backend's call of `name_ref(args)`
// and the GPU backends' `launch_name(args, stream)` (kernels/launch.h). Adding a kernel is
// kernels/NAME.h (its argument struct and NAME_ref), NAME_ref.cpp, NAME.cu, and one line here;
// an element-wise op is its declaration and one line in kernels/elementwise.h.
// (The GEMMs are not listed: the backends choose among several implementations of them.)
#pragma once

#include "kernels/attention.h"
#include "kernels/bias_act.h"
#include "kernels/cross_entropy.h"
#include "kernels/dropout.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/fp8_cast.h"
#include "kernels/fp8_gemm.h"
#include "kernels/fp8_update.h"
#include "kernels/gather_batch.h"
#include "kernels/grad_stats.h"
#include "kernels/layernorm.h"
#include "kernels/optimizers.h"
#include "kernels/sum.h"

#define HT_KERNELS(X)                          \
  HT_ELEMENTWISE_OPS(X)                        \
  X(gather_batch, GatherArgs)                  \
  X(sum, SumArgs)                              \
  X(bias_act, BiasActArgs)                     \
  X(act_backward, ActBackwardArgs)             \
  X(bias_grad, BiasGradArgs)                   \
  X(cross_entropy, CrossEntropyArgs)           \
  X(dropout, DropoutArgs)                      \
  X(embedding, EmbeddingArgs)                  \
  X(embedding_backward, EmbeddingBackwardArgs) \
  X(layernorm, LayerNormArgs)                  \
  X(layernorm_backward, LayerNormBackwardArgs) \
  X(attention, AttentionArgs)                  \
  X(attention_backward, AttentionBackwardArgs) \
  X(check_norm, CheckNormArgs)                 \
  X(finalize_grad_stats, FinalizeArgs)         \
  X(update_scaler, ScalerUpdateArgs)           \
  X(sgd_step, SgdArgs)                         \
  X(adamw_step, AdamWArgs)                     \
  X(fp8_cast, Fp8CastArgs)                     \
  X(fp8_update, Fp8UpdateArgs)                 \
  X(fp8_gemm, Fp8GemmArgs)
