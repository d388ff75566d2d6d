#include "engine/step_state.h"

namespace ht {

StepState::StepState(Backend& backend, const LrSchedule& schedule) : backend_(backend), schedule_(schedule) {
  state_ = backend.buffer(sizeof(DeviceStepState));
  write(DeviceStepState{});
}

DeviceStepState StepState::read() const {
  DeviceStepState s;
  backend_.download(&s, device(), sizeof(s));
  return s;
}

void StepState::write(const DeviceStepState& s) { backend_.upload(device(), &s, sizeof(s)); }

}  // namespace ht
