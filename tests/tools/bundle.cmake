# The gpu flavour built from a tools/deps bundle with the system's copies hidden, and its binaries
# run (tests/tools/bundle_build.sh). Registered in the simt build only, so that CI runs it once; it
# builds with every core (PROCESSORS), so ctest runs nothing beside it.
if(GRPO_FLAVOUR STREQUAL "simt")
  add_test(NAME tools_bundle_build
           COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/bundle_build.sh ${PROJECT_BINARY_DIR}/bundle_build)
  set_tests_properties(tools_bundle_build PROPERTIES LABELS tools SKIP_RETURN_CODE 77 TIMEOUT 3600
                       PROCESSORS 2)
endif()
