// Refused by the SIMT emulator (simt/): cooperative groups (grid sync, tiled partitions)
// are not emulated. Use __syncthreads and the __*_sync warp intrinsics instead.
#error "cooperative_groups.h is refused in the simt flavour: the emulator has no cooperative groups; use __syncthreads / __shfl_*_sync"
