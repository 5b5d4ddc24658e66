// Refused by the SIMT emulator (simt/): warp matrix (WMMA / tensor core) fragments are not
// emulated. Matrix products go through cuBLAS (the emulator has a GEMM shim).
#error "mma.h is refused in the simt flavour: tensor-core WMMA is not emulated; use cuBLAS"
