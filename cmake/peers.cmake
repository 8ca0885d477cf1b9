# cmake/peers.cmake - build-time detection of the peer lock libraries (included by CMakeLists.txt
# right after the lab library target locklab_lab is defined).
#
# For each peer library this defines, PUBLIC on locklab_lab (so lab/registry.c sees them):
#   LAB_HAVE_<P>=0|1        whether the adapter is compiled in
#   LAB_WHY_<P>="..."       why not, shown by `locklab-bench list` (LAB_MISSING in lab/registry.def)
# for P in RUST (std::sync::Mutex, parking_lot), ABSL (absl::Mutex), TBB (spin_mutex,
# queuing_mutex), CK (Concurrency Kit spinlocks), and links what the adapters need.
#
# Sanitizer builds (LOCKLAB_SANITIZE set) leave every peer out: their code is not instrumented, so
# ThreadSanitizer cannot see their synchronisation and would report false races through them.
# -DLOCKLAB_PEERS=OFF leaves them out too. A peer that is not found never fails the configure.

option(LOCKLAB_PEERS "build the peer adapters (Rust, absl, TBB, ck) that are found" ON)

set(_peers RUST ABSL TBB CK)
foreach(p ${_peers})
  set(LAB_HAVE_${p} 0)
endforeach()
set(LAB_WHY_RUST "cargo not found at build time")
set(LAB_WHY_ABSL "libabsl-dev not found at build time")
set(LAB_WHY_TBB "libtbb-dev not found at build time")
set(LAB_WHY_CK "libck-dev not found at build time")

if(LOCKLAB_SANITIZE OR NOT LOCKLAB_PEERS)
  if(LOCKLAB_SANITIZE)
    set(_why "not built under sanitizers (uninstrumented peer code)")
  else()
    set(_why "peers disabled (-DLOCKLAB_PEERS=OFF)")
  endif()
  foreach(p ${_peers})
    set(LAB_WHY_${p} "${_why}")
  endforeach()
else()
  # ---- Concurrency Kit: header-only spinlocks, <ck_spinlock.h> --------------------------------
  find_path(LOCKLAB_CK_INCLUDE_DIR ck_spinlock.h)
  if(LOCKLAB_CK_INCLUDE_DIR)
    set(LAB_HAVE_CK 1)
    target_include_directories(locklab_lab PRIVATE ${LOCKLAB_CK_INCLUDE_DIR})
  endif()

  # ---- oneTBB: spin_mutex and queuing_mutex (TBBConfig.cmake from libtbb-dev) -----------------
  find_package(TBB CONFIG QUIET)
  if(TARGET TBB::tbb)
    set(LAB_HAVE_TBB 1)
    target_link_libraries(locklab_lab PRIVATE TBB::tbb)
  endif()

  # ---- Abseil: absl::Mutex (abslConfig.cmake from libabsl-dev) ---------------------------------
  find_package(absl CONFIG QUIET)
  if(TARGET absl::synchronization)
    set(LAB_HAVE_ABSL 1)
    target_link_libraries(locklab_lab PRIVATE absl::synchronization)
  endif()

  # ---- Rust: peers/rust, a staticlib built by cargo into the binary dir ------------------------
  # The crates are fetched at configure time (Cargo.lock pins them) so that a machine without
  # network access gets a clear "missing" entry instead of a failing build.
  find_program(LOCKLAB_CARGO cargo HINTS $ENV{CARGO_HOME}/bin $ENV{HOME}/.cargo/bin)
  set(_rust_src ${CMAKE_SOURCE_DIR}/peers/rust)
  if(LOCKLAB_CARGO)
    execute_process(COMMAND ${LOCKLAB_CARGO} fetch --locked --quiet
                            --manifest-path ${_rust_src}/Cargo.toml
                    RESULT_VARIABLE _fetch_rc ERROR_VARIABLE _fetch_err OUTPUT_QUIET)
    if(_fetch_rc EQUAL 0)
      set(LAB_HAVE_RUST 1)
    else()
      string(REGEX REPLACE "\n.*" "" _fetch_err "${_fetch_err}")
      message(STATUS "locklab peers: cargo fetch failed: ${_fetch_err}")
      set(LAB_WHY_RUST "cargo could not fetch the crates in peers/rust/Cargo.lock at build time")
    endif()
  endif()
  if(LAB_HAVE_RUST)
    set(_rust_dir ${CMAKE_BINARY_DIR}/peers-rust)
    set(_rust_lib ${_rust_dir}/release/liblocklab_peers.a)
    # cargo tracks its own dependencies; this command reruns it when the crate's files change.
    add_custom_command(OUTPUT ${_rust_lib}
      COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${_rust_dir}
              ${LOCKLAB_CARGO} build --release --locked --quiet --manifest-path ${_rust_src}/Cargo.toml
      DEPENDS ${_rust_src}/Cargo.toml ${_rust_src}/Cargo.lock ${_rust_src}/src/lib.rs
      COMMENT "cargo: building the Rust peers (std::sync::Mutex, parking_lot)"
      VERBATIM)
    add_custom_target(locklab_peers_rust DEPENDS ${_rust_lib})
    add_library(locklab_peer_rust STATIC IMPORTED)
    # What `rustc --print native-static-libs` lists for a std staticlib on Linux.
    set_target_properties(locklab_peer_rust PROPERTIES IMPORTED_LOCATION ${_rust_lib}
      INTERFACE_LINK_LIBRARIES "gcc_s;util;rt;Threads::Threads;m;dl")
    add_dependencies(locklab_lab locklab_peers_rust)
    target_link_libraries(locklab_lab PRIVATE locklab_peer_rust)
  endif()
endif()

set(_summary "")
foreach(p ${_peers})
  target_compile_definitions(locklab_lab PUBLIC LAB_HAVE_${p}=${LAB_HAVE_${p}}
                             "LAB_WHY_${p}=\"${LAB_WHY_${p}}\"")
  if(LAB_HAVE_${p})
    string(APPEND _summary " ${p}=yes")
  else()
    string(APPEND _summary " ${p}=no")
  endif()
endforeach()
message(STATUS "locklab peers:${_summary}")

# ---- the peers' own test (the registry stress test covers them too) -----------------------------
# add_test() here runs before CMakeLists.txt's enable_testing(); the test is still recorded, since
# CTestTestfile.cmake is written at generate time for a directory with testing enabled.
add_executable(test_peers ${CMAKE_SOURCE_DIR}/peers/tests/test_peers.c)
target_include_directories(test_peers PRIVATE ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(test_peers PRIVATE locklab_lab)
add_test(NAME test_peers COMMAND test_peers)
set_tests_properties(test_peers PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
