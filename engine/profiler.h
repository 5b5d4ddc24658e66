// `grpo train --profile-epochs A:B` (tools/profile_nsys, nsys --capture-range=cudaProfilerApi):
// cudaProfilerStart before epoch A is launched, and, after a device sync so the range holds whole
// epochs, cudaProfilerStop before epoch B+1 is launched or at the end of the run. The host
// executor and the SIMT emulator have nothing to profile: there the range does nothing.
#pragma once
#include <cstdint>

namespace grpo {

class ProfileRange {
 public:
  // first < 0: off. enabled: the run is on a real CUDA device.
  ProfileRange(int first, int last, bool enabled) : first_(first), last_(last), enabled_(enabled && first >= 0) {}
  ~ProfileRange();  // closes a range still open (never throws)
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;

  void before_launch(uint32_t epoch);  // opens or closes the range around `epoch`
  void finish();                       // closes the range if it is open

 private:
  int first_, last_;
  bool enabled_;
  bool open_ = false;
};

}  // namespace grpo
