# tests/tools/check_vector_casts.py: every vector access in the CUDA sources goes through
# grpo::vector_at, whose alignment the emulator checks. Registered once, in the simt flavour.
if(GRPO_FLAVOUR STREQUAL "simt")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.vector_casts COMMAND ${Python3_EXECUTABLE} -m unittest -q tests.tools.check_vector_casts
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.vector_casts PROPERTIES LABELS tools TIMEOUT 60)
endif()
