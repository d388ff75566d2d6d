#include "engine/tape.h"

namespace ht {

void Tape::backward() {
  // Move the closures out first: they hold the activations, which are released one op at a
  // time as backward walks down, exactly when they stop being needed.
  std::vector<Backward> ops = std::move(ops_);
  ops_.clear();
  while (!ops.empty()) {
    ops.back()();
    ops.pop_back();
  }
}

}  // namespace ht
