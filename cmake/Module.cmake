# subevict_module(NAME SOURCES ... [DEPENDS ...]): one library target per module, exported as
# subevict::NAME, headers installed under include/subevict/NAME/ with their sub-folders. A module without sources is an
# INTERFACE placeholder that provides nothing yet.
include(GNUInstallDirs)
function(subevict_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS" ${ARGN})
  set(target subevict_${name})
  if(M_SOURCES)
    add_library(${target} ${M_SOURCES})
    target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/subevict>)
    target_link_libraries(${target} PUBLIC ${M_DEPENDS} PRIVATE subevict_options ${M_PRIVATE_DEPENDS})
  else()
    add_library(${target} INTERFACE)
    target_link_libraries(${target} INTERFACE ${M_DEPENDS})
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(subevict::${name} ALIAS ${target})
  install(TARGETS ${target} EXPORT subevictTargets)
  # Headers keep their folders (a module's rooms): include/subevict/NAME/ROOM/X.hpp.
  file(GLOB_RECURSE headers RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*.hpp)
  foreach(header IN LISTS headers)
    get_filename_component(folder ${header} DIRECTORY)
    install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/subevict/${name}/${folder})
  endforeach()
endfunction()
