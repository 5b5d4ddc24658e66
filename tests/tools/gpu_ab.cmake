# tools/gpu_ab without a GPU: prepare's archive and refusals, the comparison of the benches'
# JSON, and a dry run's order of builds and runs. Registered once, in the simt flavour.
if(GRPO_FLAVOUR STREQUAL "simt")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME tools.gpu_ab COMMAND ${Python3_EXECUTABLE} -m unittest -q tests.tools.test_gpu_ab
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.gpu_ab PROPERTIES LABELS tools TIMEOUT 120)
endif()
