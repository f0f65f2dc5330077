# Installs the libraries, their headers and a CMake package: find_package(subevict) then link
# subevict::core (and the other modules as they gain code).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(EXPORT subevictTargets NAMESPACE subevict::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/subevict)
configure_package_config_file(cmake/subevictConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/subevictConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/subevict)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/subevictConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/subevictConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/subevictConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/subevict)
