# bench_epoch's JSON on the host executor at a tiny size (tests/tools/bench_epoch_smoke.py): the
# rows tools/gpu_check reads. Every flavour.
if(TARGET bench_epoch)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.bench_epoch_smoke COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/bench_epoch_smoke.py
                                                $<TARGET_FILE:bench_epoch>)
  set_tests_properties(tools.bench_epoch_smoke PROPERTIES LABELS tools TIMEOUT 120)
endif()
