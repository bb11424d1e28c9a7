# fuzz.cmake -- the libFuzzer harnesses (tests/fuzz, docs/fuzzing.md), built
# when LT_FUZZ is on (./setup.sh test turns it on in its Release build).
#
# They are compiled by clang-19 with -fsanitize=fuzzer,address,undefined, not
# by the project's compiler, so each source becomes an object through a
# custom command; a harness links its own sources only (no LLVM, no Lua).
# Debian 12: libFuzzer is in libclang-rt-19-dev.

set(LT_FUZZ_FLAGS -std=c17 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror)

# Is libFuzzer there? Otherwise stop here with what to install.
set(probe ${CMAKE_BINARY_DIR}/fuzz/probe.c)
file(WRITE ${probe} "#include <stddef.h>\n#include <stdint.h>\n"
  "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n")
execute_process(COMMAND ${CLANG19} ${LT_FUZZ_FLAGS} ${probe} -o ${CMAKE_BINARY_DIR}/fuzz/probe
  RESULT_VARIABLE probe_rc OUTPUT_VARIABLE probe_out ERROR_VARIABLE probe_out)
if(NOT probe_rc EQUAL 0)
  message(FATAL_ERROR "LT_FUZZ: ${CLANG19} cannot build a libFuzzer harness (Debian: apt-get install "
    "libclang-rt-19-dev):\n${probe_out}")
endif()

# lt_fuzz_target(NAME SOURCE...): BUILD/fuzz/NAME from the sources (paths
# relative to the source tree), includes from src/.
function(lt_fuzz_target name)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz/obj/${name})
  set(objs)
  foreach(src ${ARGN})
    string(MAKE_C_IDENTIFIER ${src} stem)
    set(obj ${CMAKE_BINARY_DIR}/fuzz/obj/${name}/${stem}.o)
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CLANG19} ${LT_FUZZ_FLAGS} -I${CMAKE_SOURCE_DIR}/src -MD -MF ${obj}.d
              -c ${CMAKE_SOURCE_DIR}/${src} -o ${obj}
      DEPENDS ${CMAKE_SOURCE_DIR}/${src} DEPFILE ${obj}.d VERBATIM)
    list(APPEND objs ${obj})
  endforeach()
  set(exe ${CMAKE_BINARY_DIR}/fuzz/${name})
  add_custom_command(OUTPUT ${exe} COMMAND ${CLANG19} ${LT_FUZZ_FLAGS} ${objs} -o ${exe} -lm
    DEPENDS ${objs} VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${exe})
endfunction()

# fuzz_ir: the IR text path (tests/fuzz/fuzz_ir.c)
file(GLOB FUZZ_IR_SRC CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}
  ${CMAKE_SOURCE_DIR}/src/ir/*.c ${CMAKE_SOURCE_DIR}/src/ir/passes/*.c)
lt_fuzz_target(fuzz_ir ${FUZZ_IR_SRC} tests/fuzz/fuzz_ir.c)
# fuzz/ir: the regressions, then a deterministic run (seed 1, a fixed number
# of inputs: about a minute on two cores); any finding fails it
add_test(NAME fuzz/ir COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz_ir.sh
  ${CMAKE_BINARY_DIR}/fuzz/fuzz_ir ${CMAKE_BINARY_DIR}/fuzz/ir_work)
set_tests_properties(fuzz/ir PROPERTIES TIMEOUT 600)

# fuzz_cache: the offline kernel cache's reader (tests/fuzz/fuzz_cache.c)
lt_fuzz_target(fuzz_cache src/jit/kcache.c src/jit/cpu/cpu_payload.c tests/fuzz/fuzz_cache.c)
add_test(NAME fuzz/cache COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz_cache.sh
  ${CMAKE_BINARY_DIR}/fuzz/fuzz_cache $<TARGET_FILE:lattice> ${CMAKE_BINARY_DIR}/fuzz/cache_work)
set_tests_properties(fuzz/cache PROPERTIES TIMEOUT 600)

# fuzz_module: the AOT module reader (tests/fuzz/fuzz_module.c); module_read.c
# needs only src/ir and jit_hash, and module.c (dlopen) stays out
file(GLOB FUZZ_MODULE_IR_SRC CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/src/ir/*.c)
lt_fuzz_target(fuzz_module ${FUZZ_MODULE_IR_SRC} src/jit/kcache.c src/program/module_read.c
  tests/fuzz/fuzz_module.c)
add_test(NAME fuzz/module COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/run_fuzz_module.sh
  ${CMAKE_BINARY_DIR}/fuzz/fuzz_module $<TARGET_FILE:lattice> ${CMAKE_BINARY_DIR}/fuzz/module_work)
set_tests_properties(fuzz/module PROPERTIES TIMEOUT 600)
