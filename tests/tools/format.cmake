# tools/check_format on planted files in throwaway git repositories (the tree itself is checked by
# tools/test's format stage). Skipped (77) where no clang-format 14 is installed. Registered once,
# in the simt flavour's ctest (what CI runs).
if(GRPO_FLAVOUR STREQUAL "simt")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.format COMMAND ${Python3_EXECUTABLE} -m tests.tools.test_format
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.format PROPERTIES LABELS tools SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
