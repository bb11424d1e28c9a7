# tests.cmake -- one ctest entry per test file (see tests/README.md).
#   tests/unit/*.c     C unit tests; exit 0 = pass, 77 = skipped
#   tests/ir/*.ir      IR snapshot tests run by lattice-opt (LT_BLESS=1 rewrites them)
#   tests/lang/*.lua   Lua tests run by `lattice`; they assert against references
#   tests/fails/*.lua  scripts that must fail; first line: -- error: <text expected in the message>
#   tests/examples     the examples at a small size

file(GLOB UNIT_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/*.c)
foreach(src ${UNIT_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(unit_${name} ${src})
  if(name MATCHES "^test_rt_")   # the sparse runtime alone, compiled natively (end of file)
    target_link_libraries(unit_${name} PRIVATE lattice_rt_native)
  else()
    target_link_libraries(unit_${name} PRIVATE lattice_static)
  endif()
  add_test(NAME unit/${name} COMMAND unit_${name})
  set_tests_properties(unit/${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "LT_PTXAS=${PTXAS};LT_SOURCE_DIR=${CMAKE_SOURCE_DIR};LT_MOCK_CUDA_DRIVER=$<TARGET_FILE:lt_mock_cuda>")
endforeach()

file(GLOB IR_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/ir/*.ir)
foreach(src ${IR_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME ir/${name} COMMAND lattice-opt --test ${src})
endforeach()

# The language tests and the examples run from the same files once per
# variant: plain (lang/, examples/), and the ptx/ and cuda/ variants below, each
# named with its prefix and run with its extra environment (a list). A script
# may exit 77 (skipped), as lt.init does when the variant's arch is missing.
# The executable is `lattice` unless a third argument names another target.
file(GLOB LANG_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/lang/*.lua)
file(GLOB EXAMPLE_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/examples/*.lua)
function(lt_add_script_tests prefix env)
  set(exe lattice)
  if(ARGC GREATER 2)
    set(exe ${ARGV2})
  endif()
  set(outdir ${CMAKE_BINARY_DIR}/example_out)
  if(prefix)
    string(REGEX REPLACE "/$" "" variant ${prefix})
    set(outdir ${outdir}_${variant})
  endif()
  set(lang_env ${env} LT_SOURCE_DIR=${CMAKE_SOURCE_DIR} LT_BUILD_DIR=${CMAKE_BINARY_DIR} FILECHECK=${FILECHECK})
  foreach(src ${LANG_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_test(NAME ${prefix}lang/${name} COMMAND ${exe} ${src})
    set_tests_properties(${prefix}lang/${name} PROPERTIES SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/lang ENVIRONMENT "${lang_env}")
  endforeach()
  foreach(src ${EXAMPLE_TESTS})
    get_filename_component(name ${src} NAME_WE)
    add_test(NAME ${prefix}examples/${name} COMMAND ${exe} ${src} --test --out ${outdir})
    set_tests_properties(${prefix}examples/${name} PROPERTIES SKIP_RETURN_CODE 77)
    if(env)
      set_tests_properties(${prefix}examples/${name} PROPERTIES ENVIRONMENT "${env}")
    endif()
  endforeach()
endfunction()
lt_add_script_tests("" "")

# fuzz/data_entry: the Lua-scope data entry points against a plain-Lua model
# (tests/fuzz/data_entry.lua; a fixed seed, about 30 s here; fewer under
# the sanitizers). In the plain and sanitizer builds only, not per variant.
if(LT_SANITIZE)
  set(DATA_ENTRY_CASES 150000)
else()
  set(DATA_ENTRY_CASES 500000)
endif()
add_test(NAME fuzz/data_entry COMMAND lattice ${CMAKE_SOURCE_DIR}/tests/fuzz/data_entry.lua 1 ${DATA_ENTRY_CASES})
set_tests_properties(fuzz/data_entry PROPERTIES TIMEOUT 600)

# lang/dynamic_buffered_untabled: tests/lang/dynamic_buffered.lua without the
# threads' append tables (LT_APPEND_TABLES=off): the same kernels take their
# plain appends (src/jit/llvm/cg_append.c).
add_test(NAME lang/dynamic_buffered_untabled COMMAND lattice ${CMAKE_SOURCE_DIR}/tests/lang/dynamic_buffered.lua)
set_tests_properties(lang/dynamic_buffered_untabled PROPERTIES
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/lang ENVIRONMENT "LT_APPEND_TABLES=off")

file(GLOB FAIL_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fails/*.lua)
foreach(src ${FAIL_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME fails/${name}
    COMMAND ${CMAKE_COMMAND} -DLATTICE=$<TARGET_FILE:lattice> -DSCRIPT=${src}
            -P ${CMAKE_SOURCE_DIR}/tests/run_fail.cmake)
endforeach()

# With the CUDA toolkit's ptxas (and outside the sanitizer build, to keep its
# time down), ptx/: every kernel also compiled to PTX and assembled
# (src/jit/ptx_check.c).
set(LIBDEVICE_ENV "")
if(LIBDEVICE)
  set(LIBDEVICE_ENV "LT_LIBDEVICE=${LIBDEVICE}")
endif()
if(PTXAS AND NOT LT_SANITIZE)
  lt_add_script_tests(ptx/ "LT_CHECK_PTX=${PTXAS};${LIBDEVICE_ENV}")
endif()

# cuda/: the same scripts on the CUDA backend. LT_ARCH=cuda makes lt.init use
# arch "cuda" where the script names no arch; without a usable GPU, lt.init
# says "skipped: <reason>" and exits 77, so on a machine without one these are
# all reported as skipped. Not in the sanitizer build, like ptx/: ASan's
# shadow memory and the driver's address reservations get in each other's way.
if(NOT LT_SANITIZE)
  lt_add_script_tests(cuda/ "LT_ARCH=cuda")
endif()

# lattice-mockgpu: `lattice` with tests/cuda/cuda_emulate.c linked in, which
# builds every kernel for the host too and hands it to the mock driver, so
# that the mock runs kernels (thread by thread). Not part of Lattice.
add_executable(lattice-mockgpu ${REPL_SRC} ${CMAKE_SOURCE_DIR}/tests/cuda/cuda_emulate.c)
target_link_libraries(lattice-mockgpu PRIVATE lattice_static PkgConfig::EDIT)
# heat_host_mockgpu: examples/aot/heat_host.c the same way, so that an AOT
# module's PTX is loaded by the CUDA backend and run by the mock
# (tests/cli/aot.sh)
add_executable(heat_host_mockgpu ${CMAKE_SOURCE_DIR}/examples/aot/heat_host.c ${CMAKE_SOURCE_DIR}/tests/cuda/cuda_emulate.c)
target_link_libraries(heat_host_mockgpu PRIVATE lattice_static)

# mockgpu/: the same scripts on the CUDA backend talking to the mock driver,
# which runs the host builds of the kernels' PTX entries one GPU thread after
# another (lattice-mockgpu): the whole backend but PTX code generation, on
# any machine.
if(NOT LT_SANITIZE AND LIBDEVICE)   # the examples' math needs libdevice on CUDA
  lt_add_script_tests(mockgpu/ "LT_ARCH=cuda;LT_CUDA_DRIVER=$<TARGET_FILE:lt_mock_cuda>;LT_MOCK_CUDA_GUARD=1;${LIBDEVICE_ENV}"
    lattice-mockgpu)
endif()

# mock/: the CUDA backend's host side against the mock driver (tests/cuda/*.lua).
# A script's first line says which failure the mock injects ("-- mock: sync");
# mock_memory runs a second time without libdevice. In the sanitizer build
# too (mockgpu/ is not: LeakSanitizer's tracer crashes at the exit of two
# scripts there, with no error of ASan's before it).
file(GLOB MOCK_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cuda/*.lua)
foreach(src ${MOCK_TESTS})
  get_filename_component(name ${src} NAME_WE)
  file(STRINGS ${src} first LIMIT_COUNT 1)
  string(REGEX REPLACE "^-- mock: *" "" fail "${first}")
  set(env "LT_CUDA_DRIVER=$<TARGET_FILE:lt_mock_cuda>" ${LIBDEVICE_ENV})
  if(PTXAS)   # the mock assembles every module the backend loads
    list(APPEND env "LT_MOCK_CUDA_PTXAS=${PTXAS}")
  endif()
  if(NOT fail STREQUAL "none")
    list(APPEND env "LT_MOCK_CUDA_FAIL=${fail}")
  endif()
  add_test(NAME mock/${name} COMMAND lattice ${src})
  set_tests_properties(mock/${name} PROPERTIES WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/lang
    ENVIRONMENT "${env}")
endforeach()
add_test(NAME mock/mock_memory_no_libdevice COMMAND lattice ${CMAKE_SOURCE_DIR}/tests/cuda/mock_memory.lua)
set_tests_properties(mock/mock_memory_no_libdevice PROPERTIES WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/lang
  ENVIRONMENT "LT_CUDA_DRIVER=$<TARGET_FILE:lt_mock_cuda>;LT_LIBDEVICE=/nonexistent/libdevice.10.bc")

# tests/cli/*.sh: the `lattice` command line and REPL; each gets the executable,
# and the environment that install.sh needs to build host programs like this build
set(LT_HOST_CFLAGS "")
if(LT_SANITIZE)
  set(LT_HOST_CFLAGS "-fsanitize=address,undefined")
endif()
include(CheckLanguage)   # the C++ host example (install.sh); Lattice itself is C only
check_language(CXX)
set(LT_HOST_CXX c++)
if(CMAKE_CXX_COMPILER)
  set(LT_HOST_CXX ${CMAKE_CXX_COMPILER})
endif()
file(GLOB CLI_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cli/*.sh)
foreach(src ${CLI_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME cli/${name} COMMAND bash ${src} $<TARGET_FILE:lattice>)
  set_tests_properties(cli/${name} PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT
    "LT_BUILD_DIR=${CMAKE_BINARY_DIR};LT_CC=${CMAKE_C_COMPILER};LT_CXX=${LT_HOST_CXX};LT_HOST_CFLAGS=${LT_HOST_CFLAGS};LT_MOCK_CUDA_DRIVER=$<TARGET_FILE:lt_mock_cuda>;LT_PTXAS=${PTXAS};LT_LIBDEVICE_PATH=${LIBDEVICE}")
endforeach()

# ---- the launch schedule and the sparse runtime's host side compile without
# LLVM's headers (the runtime library of the AOT modules has no LLVM): built
# here with src/ alone on the include path, so an LLVM include fails the build.
add_library(lt_no_llvm_check OBJECT ${CMAKE_SOURCE_DIR}/src/jit/launch.c ${CMAKE_SOURCE_DIR}/src/jit/jit_task.c
  ${CMAKE_SOURCE_DIR}/src/jit/profile.c ${CMAKE_SOURCE_DIR}/src/jit/jit_sparse.c)
target_include_directories(lt_no_llvm_check PRIVATE ${CMAKE_SOURCE_DIR}/src)

# ---- the sparse runtime (src/runtime/*.c, device code) compiled natively by the
# host compiler, so its unit tests (tests/unit/test_rt_*.c) run without the JIT.
file(GLOB RT_NATIVE_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/runtime/*.c)
list(APPEND RT_NATIVE_SRC ${CMAKE_SOURCE_DIR}/src/runtime/host/mempool.c)
add_library(lattice_rt_native STATIC ${RT_NATIVE_SRC})
target_include_directories(lattice_rt_native PUBLIC ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/unit)
target_link_libraries(lattice_rt_native PUBLIC Threads::Threads)

# ---- the mock CUDA driver (tests/cuda/mock_driver.c): a libcuda.so.1 stand-in
# for testing the CUDA backend's host logic without a GPU; unit tests find it
# in $LT_MOCK_CUDA_DRIVER and load it like the real one (LT_CUDA_DRIVER). The
# runtime is compiled in so that the lt_serve kernel can run rt_serve natively;
# -fvisibility=hidden keeps that copy private, exporting only the driver API.
# Without src/runtime/service.c (rt_serve), lt_serve launches are refused.
add_library(lt_mock_cuda MODULE ${CMAKE_SOURCE_DIR}/tests/cuda/mock_driver.c ${RT_DEVICE_SRC})
set_target_properties(lt_mock_cuda PROPERTIES OUTPUT_NAME ltmockcuda
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/cuda C_VISIBILITY_PRESET hidden)
target_include_directories(lt_mock_cuda PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(lt_mock_cuda PRIVATE Threads::Threads)
if(EXISTS ${CMAKE_SOURCE_DIR}/src/runtime/service.c)
  target_compile_definitions(lt_mock_cuda PRIVATE LT_MOCK_HAVE_SERVE)
endif()
if(NOT LT_SANITIZE)   # the sanitizer runtimes are the executable's: undefined here
  target_link_options(lt_mock_cuda PRIVATE -Wl,-z,defs)   # an entry point left unwritten fails the link
endif()

# The threaded runtime test again under ThreadSanitizer (it cannot share a
# binary with ASan, so only in builds without LT_SANITIZE).
if(NOT LT_SANITIZE)
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=thread)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=thread)
  check_c_source_compiles("int main(void) { return 0; }" LT_HAVE_TSAN)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(LT_HAVE_TSAN)
    add_executable(unit_test_rt_threads_tsan ${CMAKE_SOURCE_DIR}/tests/unit/test_rt_threads.c ${RT_NATIVE_SRC})
    target_include_directories(unit_test_rt_threads_tsan PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/unit)
    target_compile_options(unit_test_rt_threads_tsan PRIVATE -fsanitize=thread -O1 -g)
    target_link_options(unit_test_rt_threads_tsan PRIVATE -fsanitize=thread)
    target_link_libraries(unit_test_rt_threads_tsan PRIVATE Threads::Threads)
    add_test(NAME unit/test_rt_threads_tsan COMMAND unit_test_rt_threads_tsan)
    set_tests_properties(unit/test_rt_threads_tsan PROPERTIES SKIP_RETURN_CODE 77
      ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
    # the thread pool, whose job hand-over is lock-free
    add_executable(unit_test_threadpool_tsan ${CMAKE_SOURCE_DIR}/tests/unit/test_threadpool.c
                   ${CMAKE_SOURCE_DIR}/src/runtime/host/threadpool.c)
    target_include_directories(unit_test_threadpool_tsan PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/unit)
    target_compile_options(unit_test_threadpool_tsan PRIVATE -fsanitize=thread -O1 -g)
    target_link_options(unit_test_threadpool_tsan PRIVATE -fsanitize=thread)
    target_link_libraries(unit_test_threadpool_tsan PRIVATE Threads::Threads)
    add_test(NAME unit/test_threadpool_tsan COMMAND unit_test_threadpool_tsan)
    set_tests_properties(unit/test_threadpool_tsan PROPERTIES
      ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
  endif()
endif()

# The suite tests the compiler: no test reads or fills the offline kernel
# cache unless it sets LT_CACHE itself (tests/cli/cache.sh).
get_property(lt_all_tests DIRECTORY PROPERTY TESTS)
foreach(t ${lt_all_tests})
  get_test_property(${t} ENVIRONMENT env)
  if(NOT env MATCHES "LT_CACHE=")
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "LT_CACHE=off")
  endif()
endforeach()
