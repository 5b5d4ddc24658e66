// Refused by the SIMT emulator (simt/): cooperative groups (grid sync, tiled partitions)
// are not emulated. Use __syncthreads and the __*_sync warp intrinsics instead.
#error "cooperative_groups.h is refused in the simt flavour: no cooperative groups in the emulator"
