# The worker's impl table (worker/impls.json), compiled into the binary: the worker's impls are
# registered and listed without starting Python, and where Python or PyTorch is missing.
set(OPMETER_WORKER_IMPLS_FILE ${CMAKE_CURRENT_SOURCE_DIR}/worker/impls.json)
set(OPMETER_EMBEDDED_WORKER_IMPLS ${CMAKE_CURRENT_BINARY_DIR}/generated/worker_impls_table.cpp)
file(READ ${OPMETER_WORKER_IMPLS_FILE} _worker_impls)
file(WRITE ${OPMETER_EMBEDDED_WORKER_IMPLS}.tmp
"#include \"worker/worker_impls.hpp\"\n\nnamespace opmeter::worker {\nconst char* built_in_impl_table() {\n  return R\"opmeter_impls(${_worker_impls})opmeter_impls\";\n}\n}  // namespace opmeter::worker\n")
configure_file(${OPMETER_EMBEDDED_WORKER_IMPLS}.tmp ${OPMETER_EMBEDDED_WORKER_IMPLS} COPYONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${OPMETER_WORKER_IMPLS_FILE})
