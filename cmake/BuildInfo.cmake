# Records the git SHA, compiler and build type in generated source files (rule 9: reproducible).
# The SHA is written at every build (WriteGitSha.cmake), the rest when CMake configures.
set(OPMETER_GIT_SHA_SOURCE ${CMAKE_CURRENT_BINARY_DIR}/generated/git_sha.cpp)
set(opmeter_write_git_sha ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR} -DOUT=${OPMETER_GIT_SHA_SOURCE}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/WriteGitSha.cmake)
execute_process(COMMAND ${opmeter_write_git_sha})
add_custom_target(opmeter_git_sha COMMAND ${opmeter_write_git_sha} BYPRODUCTS ${OPMETER_GIT_SHA_SOURCE}
                  COMMENT "" VERBATIM)
set(OPMETER_BUILD_INFO ${CMAKE_CURRENT_BINARY_DIR}/generated/build_info.cpp)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/build_info.cpp.in ${OPMETER_BUILD_INFO} @ONLY)
