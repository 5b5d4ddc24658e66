// Host twin of advance_schedule (kernels/train_scalars.cu): the same shared function.
#include "kernels/train_scalars.h"

namespace grpo {

void finish_update_host(TrainScalars* s) { finish_update_one(s); }
void advance_schedule_host(TrainScalars* s) { advance_schedule_one(s); }

}  // namespace grpo
