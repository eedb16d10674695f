# Writes the git SHA of SOURCE_DIR into OUT, at build time (the commit built, not the one CMake
# configured), and only when it changed, so an unchanged tree rebuilds nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT sha)
  set(sha "unknown")
elseif(dirty)
  set(sha "${sha}-dirty")
endif()
set(text "#include \"context/build_info.hpp\"\n\nnamespace opmeter::build_info {\nconst char* const git_sha = \"${sha}\";\n}  // namespace opmeter::build_info\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
