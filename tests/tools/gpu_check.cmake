# tools/gpu_check without a GPU: its parsers on recorded tool output, the prebuilt programs' pack
# and unpack (tools/gpu_prebuilt), tools/gpu_session's shares and summary, and a dry run over the
# gpu flavour's build folder (skipped when that flavour was not built, GRPO_SKIP_GPU_BUILD=1).
# Registered once, in the simt flavour's ctest (what CI runs).
if(GRPO_FLAVOUR STREQUAL "simt")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.gpu_kit_parsers
           COMMAND ${Python3_EXECUTABLE} -m unittest -q tests.tools.test_gpu_kit tests.tools.test_gpu_kit_speed tests.tools.test_profile_ncu
                   tests.tools.test_gpu_prebuilt tests.tools.test_gpu_session
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  add_test(NAME tools.gpu_check_dry_run
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/gpu_check_dry_run.py
                   ${PROJECT_BINARY_DIR}/gpu-check-dry-run)
  set_tests_properties(tools.gpu_kit_parsers tools.gpu_check_dry_run PROPERTIES
                       LABELS tools SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
