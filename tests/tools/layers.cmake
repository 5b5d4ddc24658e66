# tools/check_layers.py: includes point down the layers (docs/design.md, "Layers"); its own test
# plants violations. Registered once, in the simt flavour's ctest (what CI runs).
if(GRPO_FLAVOUR STREQUAL "simt")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.layers COMMAND ${Python3_EXECUTABLE} -m unittest -q tests.tools.test_layers
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.layers PROPERTIES LABELS tools TIMEOUT 120)
endif()
