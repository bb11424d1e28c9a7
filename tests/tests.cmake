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
  target_link_libraries(unit_${name} PRIVATE lattice_static)
  add_test(NAME unit/${name} COMMAND unit_${name})
  set_tests_properties(unit/${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "LT_PTXAS=${PTXAS};LT_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endforeach()

file(GLOB IR_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/ir/*.ir)
foreach(src ${IR_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME ir/${name} COMMAND lattice-opt --test ${src})
endforeach()

file(GLOB LANG_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/lang/*.lua)
foreach(src ${LANG_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME lang/${name} COMMAND lattice ${src})
  set_tests_properties(lang/${name} PROPERTIES SKIP_RETURN_CODE 77
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tests/lang
    ENVIRONMENT "LT_SOURCE_DIR=${CMAKE_SOURCE_DIR};LT_BUILD_DIR=${CMAKE_BINARY_DIR};FILECHECK=${FILECHECK}")
endforeach()

file(GLOB FAIL_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fails/*.lua)
foreach(src ${FAIL_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME fails/${name}
    COMMAND ${CMAKE_COMMAND} -DLATTICE=$<TARGET_FILE:lattice> -DSCRIPT=${src}
            -P ${CMAKE_SOURCE_DIR}/tests/run_fail.cmake)
endforeach()

file(GLOB EXAMPLE_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/examples/*.lua)
foreach(src ${EXAMPLE_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME examples/${name} COMMAND lattice ${src} --test --out ${CMAKE_BINARY_DIR}/example_out)
endforeach()
