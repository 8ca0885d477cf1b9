# preload/preload.cmake - the LD_PRELOAD shim and what runs programs under it (included at the end of
# CMakeLists.txt):
#   liblocklab-preload.so   preload/shim.c + preload/stat.c on the lab's registry (locklab_lab)
#   locklab-exec            runs one command and reports its wall and CPU time as JSON (preload/exec.c)
#   locklab-app-cxx-queue   our C++ std::mutex/std::condition_variable program (apps/cxx-queue.cc)
# and gives the tests/test_preload_*.c programs the shim's path (LOCKLAB_PRELOAD).
#
# The exported symbols carry glibc's symbol versions, which differ per architecture: x86_64 and
# aarch64 are defined (preload/<arch>.map); elsewhere the shim is not built and `locklab run` says so.

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(_lkp_map ${CMAKE_SOURCE_DIR}/preload/x86_64.map)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(_lkp_map ${CMAKE_SOURCE_DIR}/preload/aarch64.map)
else()
  message(STATUS "locklab preload shim: not built (glibc symbol versions are defined for x86_64 and aarch64 only)")
  set(_lkp_map "")
endif()

if(_lkp_map)
  add_library(locklab-preload SHARED ${CMAKE_SOURCE_DIR}/preload/shim.c ${CMAKE_SOURCE_DIR}/preload/stat.c)
  set_target_properties(locklab-preload PROPERTIES OUTPUT_NAME locklab-preload C_VISIBILITY_PRESET hidden
    LINK_DEPENDS ${_lkp_map})
  target_include_directories(locklab-preload PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/preload)
  target_link_libraries(locklab-preload PRIVATE locklab_lab ${CMAKE_DL_LIBS})
  # Only the pthread symbols (with glibc's versions) and locklab_preload_* leave the library; the
  # lab, the library and the peers inside it stay local. --as-needed: no libstdc++ unless a peer
  # needs it.
  target_link_options(locklab-preload PRIVATE -Wl,--version-script=${_lkp_map} -Wl,--no-undefined
                      -Wl,--as-needed)
  install(TARGETS locklab-preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  if(LAB_HAVE_ABSL)
    # absl_mutex: absl's release-build mode (preload/absl_mode.cc says why)
    target_sources(locklab-preload PRIVATE ${CMAKE_SOURCE_DIR}/preload/absl_mode.cc)
    target_link_libraries(locklab-preload PRIVATE absl::synchronization)
  endif()

  # Every tests/test_preload_*.c runs itself under the shim (tests/preload_test.h). In a cross build
  # its children run under the same emulator as the test itself (LOCKLAB_TEST_EMULATOR: qemu-user
  # cannot exec an arm64 program on its own without a binfmt_misc registration).
  set(_lkp_test_env "LOCKLAB_PRELOAD=$<TARGET_FILE:locklab-preload>")
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " _lkp_emu)
    list(APPEND _lkp_test_env "LOCKLAB_TEST_EMULATOR=${_lkp_emu}")
  endif()
  # A library whose constructor registers fork handlers before the preloaded shim's constructor runs
  # (tests/preload_atfork_lib.c), for test_preload_atfork_ctor.
  add_library(lkp-atfork-lib SHARED ${CMAKE_SOURCE_DIR}/tests/preload_atfork_lib.c)
  target_link_libraries(lkp-atfork-lib PRIVATE Threads::Threads)
  if(TARGET test_preload_atfork_ctor)
    target_link_libraries(test_preload_atfork_ctor PRIVATE lkp-atfork-lib)
  endif()
  foreach(src ${LOCKLAB_TESTS})
    get_filename_component(name ${src} NAME_WE)
    if(name MATCHES "^test_preload_")
      add_dependencies(${name} locklab-preload)
      set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT ${_lkp_test_env})
    endif()
  endforeach()
endif()

add_executable(locklab-exec ${CMAKE_SOURCE_DIR}/preload/exec.c)
target_link_libraries(locklab-exec PRIVATE locklab_lab)
install(TARGETS locklab-exec RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

add_executable(locklab-app-cxx-queue ${CMAKE_SOURCE_DIR}/apps/cxx-queue.cc)
target_link_libraries(locklab-app-cxx-queue PRIVATE Threads::Threads)
