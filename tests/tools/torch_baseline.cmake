# bench/torch_baseline.py, the PyTorch peer of the trainer: a tiny CPU run whose JSON is checked,
# and its batched game against `grpo replay` on random states and draws. The checker looks for an
# interpreter that imports torch itself (Debian's lives in /usr/bin/python3) and exits 77 (skipped)
# when none does. Registered once, in the simt flavour's ctest (what CI runs).
if(GRPO_FLAVOUR STREQUAL "simt")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(_tb_check ${PROJECT_SOURCE_DIR}/tests/tools/torch_baseline_check.py)
  set(_tb ${PROJECT_SOURCE_DIR}/bench/torch_baseline.py)
  add_test(NAME tools.torch_baseline_run COMMAND ${Python3_EXECUTABLE} ${_tb_check} run ${_tb})
  set_tests_properties(tools.torch_baseline_run PROPERTIES LABELS tools SKIP_RETURN_CODE 77 TIMEOUT 300)
  if(TARGET grpo)
    add_test(NAME tools.torch_baseline_game
             COMMAND ${Python3_EXECUTABLE} ${_tb_check} replay ${_tb} $<TARGET_FILE:grpo>)
    set_tests_properties(tools.torch_baseline_game PROPERTIES LABELS tools SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
endif()
