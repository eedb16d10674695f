# Records the git SHA, compiler and build type in a generated source file (rule 9: reproducible).
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                OUTPUT_VARIABLE OPMETER_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                OUTPUT_VARIABLE OPMETER_GIT_DIRTY OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT OPMETER_GIT_SHA)
  set(OPMETER_GIT_SHA "unknown")
elseif(OPMETER_GIT_DIRTY)
  set(OPMETER_GIT_SHA "${OPMETER_GIT_SHA}-dirty")
endif()
set(OPMETER_BUILD_INFO ${CMAKE_CURRENT_BINARY_DIR}/generated/build_info.cpp)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/build_info.cpp.in ${OPMETER_BUILD_INFO} @ONLY)
