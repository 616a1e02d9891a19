# Helper functions so that a new module, test, benchmark or fuzz target is a
# few lines. Every target gets the project's warnings and sanitizer flags.

function(sluice_set_compile_options target)
  # Designated initializers ({.parallelism = 4}) leave other fields at their
  # defaults on purpose; g++ 12 would warn about each.
  # nvcc (.cu files) takes the host compiler's flags through -Xcompiler.
  set(cxx "$<COMPILE_LANGUAGE:CXX>")
  set(cuda "$<COMPILE_LANGUAGE:CUDA>")
  target_compile_options(${target} PRIVATE
    "$<${cxx}:-Wall;-Wextra;-Wno-missing-field-initializers>"
    "$<${cuda}:-Xcompiler=-Wall,-Wextra,-Wno-missing-field-initializers>")
  if(SLUICE_WERROR)
    target_compile_options(${target} PRIVATE "$<${cxx}:-Werror>"
                                             "$<${cuda}:-Werror=all-warnings;-Xcompiler=-Werror>")
  endif()
  if(SLUICE_SANITIZE)
    # vptr stays recoverable only so scripts/ubsan.supp can silence oneTBB's
    # header; `make asan` sets halt_on_error=1, so any other report is fatal.
    set(san -fsanitize=${SLUICE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all
            -fsanitize-recover=vptr)
    # -Xcompiler splits at commas: one -fsanitize= per sanitizer for nvcc.
    string(REPLACE "," ";" sanitizers "${SLUICE_SANITIZE}")
    list(TRANSFORM sanitizers PREPEND "-fsanitize=")
    list(JOIN sanitizers "," cuda_san)
    target_compile_options(${target} PRIVATE "$<${cxx}:${san}>"
      "$<${cuda}:-Xcompiler=${cuda_san},-fno-omit-frame-pointer,-fno-sanitize-recover=all,-fsanitize-recover=vptr>")
    target_link_options(${target} PRIVATE -fsanitize=${SLUICE_SANITIZE})
  endif()
  if(SLUICE_FUZZ)
    # Sanitizer instrumentation keeps `omp simd` loops from vectorizing;
    # clang reports each as a failed transformation.
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                                             -fno-omit-frame-pointer -Wno-pass-failed)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# sluice_module(NAME <name> SOURCES ... [DEPS ...] [PRIVATE_DEPS ...])
# Creates library sluice_<name>, exported and aliased as sluice::<name>.
function(sluice_module)
  cmake_parse_arguments(M "" "NAME" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(target sluice_${M_NAME})
  add_library(${target} ${M_SOURCES})
  add_library(sluice::${M_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${M_NAME} OUTPUT_NAME sluice_${M_NAME})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/include>
    $<BUILD_INTERFACE:${SLUICE_GEN_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  sluice_set_compile_options(${target})
  set_property(GLOBAL APPEND PROPERTY SLUICE_MODULES ${target})
  # Public headers: everything under the module folder except internal/,
  # cpu/ (nn's CPU backend, whose headers include oneDNN's) and cuda/ (the
  # module's CUDA twins: sluice_cuda_module installs theirs).
  file(GLOB_RECURSE headers RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  foreach(h ${headers})
    if(NOT h MATCHES "^(internal|cpu|cuda)/")
      get_filename_component(dir ${h} DIRECTORY)
      install(FILES ${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sluice/${M_NAME}/${dir})
    endif()
  endforeach()
endfunction()

# sluice_cuda_module(NAME <module> SOURCES ... [DEPS ...] [PRIVATE_DEPS ...])
# The CUDA twins of a module, from its cuda/ folder: library
# sluice_<module>_cuda (sluice::<module>_cuda), which links the module and
# the device runtime. Built only when CMake found nvcc (SLUICE_HAVE_CUDA);
# its public headers are cuda/*.h (cuda/internal/ stays private). Call it
# from <module>/cuda/CMakeLists.txt.
function(sluice_cuda_module)
  cmake_parse_arguments(M "" "NAME" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(NOT SLUICE_HAVE_CUDA)
    return()
  endif()
  set(target sluice_${M_NAME}_cuda)
  add_library(${target} ${M_SOURCES})
  add_library(sluice::${M_NAME}_cuda ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${M_NAME}_cuda OUTPUT_NAME ${target})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC sluice::${M_NAME} sluice::device ${M_DEPS}
                                  PRIVATE ${M_PRIVATE_DEPS} CUDA::cudart_static)
  sluice_set_compile_options(${target})
  # __host__ __device__ lambdas: one element function serves the kernel and
  # the host backend's loop (device/cuda/kernel_util.cuh). Host loops round
  # as the CPU kernels do, without FMA contraction, whatever -march is given.
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda;-Xcompiler=-ffp-contract=off>")
  set_property(GLOBAL APPEND PROPERTY SLUICE_MODULES ${target})
  file(GLOB headers RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sluice/${M_NAME}/cuda)
endfunction()

# sluice_test(NAME <name> SOURCES ... [DEPS ...])
# A GoogleTest executable whose cases are registered with CTest.
function(sluice_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} sluice_test_util GTest::gtest GTest::gmock
                                          GTest::gtest_main)
  sluice_set_compile_options(${T_NAME})
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST
                       PROPERTIES ENVIRONMENT "SLUICE_TEST_DATA=${CMAKE_SOURCE_DIR}/tests/data")
endfunction()

# sluice_benchmark(NAME <name> SOURCES ... [DEPS ...])
function(sluice_benchmark)
  cmake_parse_arguments(B "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${B_NAME} ${B_SOURCES})
  target_link_libraries(${B_NAME} PRIVATE ${B_DEPS} benchmark::benchmark)
  sluice_set_compile_options(${B_NAME})
endfunction()

# sluice_fuzzer(NAME <name> SOURCES ... [DEPS ...]): a libFuzzer target,
# built only with -DSLUICE_FUZZ=ON and clang.
function(sluice_fuzzer)
  cmake_parse_arguments(F "" "NAME" "SOURCES;DEPS" ${ARGN})
  if(NOT SLUICE_FUZZ)
    return()
  endif()
  add_executable(${F_NAME} ${F_SOURCES})
  target_link_libraries(${F_NAME} PRIVATE ${F_DEPS})
  sluice_set_compile_options(${F_NAME})
  target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer)
  set_property(GLOBAL APPEND PROPERTY SLUICE_FUZZERS ${F_NAME})
endfunction()
