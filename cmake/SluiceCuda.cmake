# Decides whether the CUDA parts (device/cuda/, the <module>/cuda/ twins) are
# built and, if so, enables CUDA.
#
# SLUICE_WITH_CUDA: AUTO (default: build them when nvcc is found), ON (fail
# when it is not) or OFF. Sets SLUICE_HAVE_CUDA for the rest of the build.
# The fuzz build (clang, -Werror) leaves them out under AUTO.
set(SLUICE_WITH_CUDA AUTO CACHE STRING "Build the gpu/ module: AUTO (if nvcc is found), ON or OFF")
set_property(CACHE SLUICE_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
set(SLUICE_HAVE_CUDA OFF)

if(SLUICE_WITH_CUDA STREQUAL "OFF" OR (SLUICE_WITH_CUDA STREQUAL "AUTO" AND SLUICE_FUZZ))
  message(STATUS "sluice: gpu/ module not built (SLUICE_WITH_CUDA=${SLUICE_WITH_CUDA})")
  return()
endif()

# sm_90 machine code for H100/H200 plus compute_90 PTX that newer GPUs JIT.
# One architecture keeps nvcc's share of a CI build small.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(SLUICE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "sluice: SLUICE_WITH_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "put nvcc on PATH or set CUDACXX")
  endif()
  message(STATUS "sluice: nvcc not found; gpu/ module not built")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
endif()
# CMake 3.25 knows nvcc's flags only up to C++17; kernels need no more.
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(SLUICE_CCACHE)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${SLUICE_CCACHE})
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
# nvcc must not get -isystem /usr/include (from packages found there): it
# breaks libstdc++'s #include_next <math.h>. g++ searches it anyway.
list(APPEND CMAKE_CUDA_IMPLICIT_INCLUDE_DIRECTORIES /usr/include)
set(SLUICE_HAVE_CUDA ON)
message(STATUS "sluice: gpu/ module built with CUDA ${CUDAToolkit_VERSION} "
               "(architectures: ${CMAKE_CUDA_ARCHITECTURES})")
