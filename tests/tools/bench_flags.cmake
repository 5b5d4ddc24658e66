# The bench programs refuse a bad flag or value as grpo does: one line on stderr, exit code 2,
# nothing run. Registered in every flavour, for each bench program that flavour builds.
foreach(_entry "bench_epoch:--repeats=-3" "bench_kernels:--repeats=-3" "bench_kernels_cuda:--repeats=-3"
               "env_step:--steps=-3" "env_step_cuda:--steps=-3" "bench_rollout_cuda:--preset=tiny"
               "bench_gemm_algos_cuda:--ranks=0")
  string(REPLACE ":" ";" _parts "${_entry}")
  list(GET _parts 0 _prog)
  list(GET _parts 1 _bad_value)
  if(NOT TARGET ${_prog})
    continue()
  endif()
  foreach(_case "--no-such-flag" "${_bad_value}")
    string(MAKE_C_IDENTIFIER "${_case}" _id)
    add_test(NAME tools.bench_flags.${_prog}${_id}
             COMMAND bash -c "out=$($<TARGET_FILE:${_prog}> ${_case} 2>&1 >/dev/null); rc=$?; echo \"$out\"; \
[ $rc -eq 2 ] && [ $(printf '%s\\n' \"$out\" | wc -l) -eq 1 ]")
    set_tests_properties(tools.bench_flags.${_prog}${_id} PROPERTIES LABELS tools TIMEOUT 60)
  endforeach()
endforeach()
