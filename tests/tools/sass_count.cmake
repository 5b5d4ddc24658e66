# tools/sass_count without nvcc or the disassembler: its reading of nvdisasm's output and its
# refusals. Registered once, in the simt flavour.
if(GRPO_FLAVOUR STREQUAL "simt")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.sass_count COMMAND ${Python3_EXECUTABLE} -m unittest -q tests.tools.test_sass_count
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.sass_count PROPERTIES LABELS tools TIMEOUT 120)
endif()
