# bench_gemm_algos_cuda's emulator run (tests/tools/bench_gemm_algos_smoke.py). Registered in the
# simt flavour (what CI runs).
if(GRPO_FLAVOUR STREQUAL "simt" AND TARGET bench_gemm_algos_cuda)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.bench_gemm_algos_smoke
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/bench_gemm_algos_smoke.py
                   $<TARGET_FILE:bench_gemm_algos_cuda>)
  set_tests_properties(tools.bench_gemm_algos_smoke PROPERTIES LABELS tools TIMEOUT 120)
endif()
