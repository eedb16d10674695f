# Built-in suites are YAML files under suites/, compiled into the binary so it runs from anywhere.
file(GLOB OPMETER_SUITE_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/suites/*.yaml)
set(OPMETER_EMBEDDED_SUITES ${CMAKE_CURRENT_BINARY_DIR}/generated/suites.cpp)
set(_entries "")
foreach(f ${OPMETER_SUITE_FILES})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} content)
  string(APPEND _entries "    {\"${name}\", R\"opmeter_suite(${content})opmeter_suite\"},\n")
endforeach()
file(WRITE ${OPMETER_EMBEDDED_SUITES}.tmp
"#include \"config/suites.hpp\"\n\nnamespace opmeter {\nconst std::map<std::string, std::string>& builtin_suites() {\n  static const std::map<std::string, std::string> suites = {\n${_entries}  };\n  return suites;\n}\n}  // namespace opmeter\n")
configure_file(${OPMETER_EMBEDDED_SUITES}.tmp ${OPMETER_EMBEDDED_SUITES} COPYONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${OPMETER_SUITE_FILES})
