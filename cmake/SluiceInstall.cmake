# Install rules, the exported CMake package (find_package(sluice)) and the
# pkg-config file.
include(CMakePackageConfigHelpers)

get_property(sluice_modules GLOBAL PROPERTY SLUICE_MODULES)
install(TARGETS ${sluice_modules} EXPORT sluiceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT sluiceTargets NAMESPACE sluice::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sluiceConfig.cmake.in
  ${CMAKE_BINARY_DIR}/sluiceConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/sluiceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/sluiceConfig.cmake ${CMAKE_BINARY_DIR}/sluiceConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)

# Arrow C++'s libraries, when built with them (sluiceConfig.cmake finds them
# here; their headers are not needed: sluice's public headers hide Arrow).
set(SLUICE_PC_ARROW_LIBS "")
if(SLUICE_HAVE_ARROW)
  foreach(lib arrow arrow_s3 parquet)
    install(FILES ${SLUICE_ARROW_ROOT}/lib/lib${lib}.so.${SLUICE_ARROW_SOVERSION}
            DESTINATION ${CMAKE_INSTALL_LIBDIR}/sluice-arrow)
    string(APPEND SLUICE_PC_ARROW_LIBS " -l:lib${lib}.so.${SLUICE_ARROW_SOVERSION}")
  endforeach()
  set(SLUICE_PC_ARROW_LIBS "-L\${libdir}/sluice-arrow -Wl,-rpath,\${libdir}/sluice-arrow${SLUICE_PC_ARROW_LIBS}")
endif()

# pkg-config: libraries listed dependents first.
set(SLUICE_PC_LIBS "")
foreach(m IN LISTS sluice_modules)
  string(PREPEND SLUICE_PC_LIBS "-l${m} ")
endforeach()
# Relocatable: the prefix is found relative to the .pc file itself.
file(RELATIVE_PATH SLUICE_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" SLUICE_PC_TO_PREFIX "${SLUICE_PC_TO_PREFIX}")
# The static CUDA runtime of sluice_device and the *_cuda twins, when built.
set(SLUICE_PC_CUDA_LIBS "")
if(SLUICE_HAVE_CUDA)
  set(SLUICE_PC_CUDA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -lpthread")
endif()
# sluice_distribute's MPI library, when built with it.
list(JOIN SLUICE_MPI_LIBRARIES " " SLUICE_PC_MPI_LIBS)
configure_file(${CMAKE_CURRENT_LIST_DIR}/sluice.pc.in ${CMAKE_BINARY_DIR}/sluice.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/sluice.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
