# tests/advise/advise.cmake - the small programs `locklab advise`'s tests run (python/tests/test_advise.py),
# built into build/tests/advise/ (never installed; included from CMakeLists.txt):
#   locklab-advise-contended   many threads on one mutex: the lock matters
#   locklab-advise-quiet       one thread: the lock cannot matter (the profile shows no contention)
#   locklab-advise-lockstate   output that depends on the lock (--check-output)
foreach(_adv contended quiet lockstate)
  add_executable(locklab-advise-${_adv} ${CMAKE_SOURCE_DIR}/tests/advise/${_adv}.c)
  target_link_libraries(locklab-advise-${_adv} PRIVATE Threads::Threads)
  set_target_properties(locklab-advise-${_adv} PROPERTIES
                        RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/advise)
endforeach()
