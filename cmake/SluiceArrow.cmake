# Apache Arrow C++ from pyarrow's wheel (scripts/fetch-arrow.sh), optional:
#   SLUICE_ARROW_ROOT   where the script unpacked it (default build/arrow of
#                       the source tree; the Makefile passes it to every build)
#   SLUICE_WITH_ARROW   AUTO (default: use it when found), ON (required), OFF
# Sets SLUICE_HAVE_ARROW and, when true, the imported targets
#   sluice_ext::arrow     libarrow (local, GCS and Azure file systems, io)
#   sluice_ext::arrow_s3  libarrow_s3 (S3FileSystem)
#   sluice_ext::parquet   libparquet
# whose headers are SYSTEM includes (Arrow's own warnings are not ours).
set(SLUICE_WITH_ARROW AUTO CACHE STRING "Build the object-store file systems and Parquet on Arrow C++: AUTO, ON, OFF")
set(SLUICE_ARROW_ROOT "${CMAKE_SOURCE_DIR}/build/arrow" CACHE PATH
    "Arrow C++ unpacked by scripts/fetch-arrow.sh (include/, lib/)")
set(SLUICE_ARROW_SOVERSION 2600)

set(SLUICE_HAVE_ARROW OFF)
if(NOT SLUICE_WITH_ARROW STREQUAL "OFF")
  set(_arrow_libs arrow arrow_s3 parquet)
  set(_arrow_found ON)
  foreach(lib ${_arrow_libs})
    if(NOT EXISTS "${SLUICE_ARROW_ROOT}/lib/lib${lib}.so.${SLUICE_ARROW_SOVERSION}")
      set(_arrow_found OFF)
    endif()
  endforeach()
  if(NOT EXISTS "${SLUICE_ARROW_ROOT}/include/arrow/api.h" OR
     NOT EXISTS "${SLUICE_ARROW_ROOT}/include/parquet/arrow/reader.h")
    set(_arrow_found OFF)
  endif()
  if(_arrow_found)
    set(SLUICE_HAVE_ARROW ON)
    foreach(lib ${_arrow_libs})
      if(NOT TARGET sluice_ext::${lib})
        add_library(sluice_ext::${lib} SHARED IMPORTED GLOBAL)
        set_target_properties(sluice_ext::${lib} PROPERTIES
          IMPORTED_LOCATION "${SLUICE_ARROW_ROOT}/lib/lib${lib}.so.${SLUICE_ARROW_SOVERSION}"
          IMPORTED_SONAME "lib${lib}.so.${SLUICE_ARROW_SOVERSION}"
          INTERFACE_INCLUDE_DIRECTORIES "${SLUICE_ARROW_ROOT}/include"
          INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${SLUICE_ARROW_ROOT}/include")
      endif()
    endforeach()
    set_property(TARGET sluice_ext::arrow_s3 sluice_ext::parquet APPEND PROPERTY
                 INTERFACE_LINK_LIBRARIES sluice_ext::arrow)
    message(STATUS "sluice: Arrow C++ from ${SLUICE_ARROW_ROOT} (object stores and Parquet on)")
  elseif(SLUICE_WITH_ARROW STREQUAL "ON")
    message(FATAL_ERROR "SLUICE_WITH_ARROW=ON but no Arrow C++ in ${SLUICE_ARROW_ROOT}: "
                        "run scripts/fetch-arrow.sh ${SLUICE_ARROW_ROOT}")
  else()
    message(STATUS "sluice: no Arrow C++ in ${SLUICE_ARROW_ROOT} (scripts/fetch-arrow.sh): "
                   "built without object stores and Parquet")
  endif()
endif()
