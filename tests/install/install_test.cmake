# install_test.cmake: one step of the install test (tests/install/CMakeLists.txt),
# run with cmake -P and -DSTEP=<step>:
#   install   cmake --install of this build into a fresh PREFIX; the files providers rely on are there
#   build     a copy of examples/provider, configured (fresh) with CMAKE_PREFIX_PATH=PREFIX and built
#   run       the provider program's host part: its own kernel chosen, a decline reported
#   census    `PREFIX/bin/ingot census` of the provider's pack: one kernel for each of ARCHS
#   rebuild   the build's dependencies: nothing to do when nothing changed; touching the YAML or a
#             template re-runs only the generator; touching a header rebuilds what includes it
#   pkgconfig a program built with `pkg-config --cflags --libs ingot` and the README's rpath opens the
#             installed pack with no LD_LIBRARY_PATH; so do one built with `--libs ingot_static` (no
#             libingot.so needed) and one with `--static --libs ingot -static` (nothing shared)
#   append    `PREFIX/bin/ingot build` of a KV-cache append pack of the provider's own (the second
#             family): its kernels for ARCHS and its dispatch library, compiled against the
#             installed ingot/kv_append.h and planner (include/ingot/dispatch), then its census
# (The Python install is test_python_install.py, the test install_python.)
# Every failure is a FATAL_ERROR naming what differed.

cmake_minimum_required(VERSION 3.25)

function(run)
  cmake_parse_arguments(R "" "OUT;WORKING_DIRECTORY" "COMMAND" ${ARGN})
  execute_process(COMMAND ${R_COMMAND} WORKING_DIRECTORY "${R_WORKING_DIRECTORY}"
                  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
  message("$ ${R_COMMAND}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "exit status ${rc}: ${R_COMMAND}")
  endif()
  if(R_OUT)
    set(${R_OUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

function(expect text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "expected output matching '${regex}'")
  endif()
endfunction()

function(expect_not text regex)
  if(text MATCHES "${regex}")
    message(FATAL_ERROR "unexpected output matching '${regex}': '${CMAKE_MATCH_0}'")
  endif()
endfunction()

string(REPLACE "," ";" ARCHS "${ARCHS}") # the archs the provider's pack must have
set(pack provider_decode)
set(kernel provider_decode_bf16_d128_g2_sq1_contig_w4t16)
set(src "${WORK}/src")
set(build "${WORK}/build")
set(pack_dir "${build}/packs/${pack}")
# A ninja or make line of the provider build that compiles one of its kernels.
set(kernel_compile "ingot: ${kernel} for")

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")
  run(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}")
  foreach(f include/ingot/ingot.h include/ingot/kv_append.h include/ingot/dispatch/dispatch.h
            include/ingot/dispatch/ingot_attention_decode_plan.h include/ingot/dispatch/ingot_kv_append_plan.h
            bin/ingot
            ${LIBDIR}/libingot.so ${LIBDIR}/libingot_static.a
            ${LIBDIR}/cmake/ingot/ingotConfig.cmake ${LIBDIR}/cmake/ingot/ingotConfigVersion.cmake
            ${LIBDIR}/cmake/ingot/ingotTargets.cmake ${LIBDIR}/pkgconfig/ingot.pc
            share/ingot/python/ingot/__main__.py share/ingot/templates/attention_decode.hip.j2
            share/ingot/configs/kv_append.yaml share/ingot/packs/kv_append/kv_append.kdp.json
            share/ingot/packs/attention_decode/attention_decode.kdp.json)
    if(NOT EXISTS "${PREFIX}/${f}")
      message(FATAL_ERROR "not installed: ${PREFIX}/${f}")
    endif()
  endforeach()
  foreach(f ${LIBDIR}/libingot.a ${LIBDIR}/pkgconfig/ingot_static.pc)
    if(NOT EXISTS "${PREFIX}/${f}")
      message(FATAL_ERROR "not installed: ${PREFIX}/${f}")
    endif()
  endforeach()
  # The exported targets name no file of the build machine (libjansson is found by ingotConfig.cmake).
  file(GLOB target_files "${PREFIX}/${LIBDIR}/cmake/ingot/ingotTargets*.cmake")
  foreach(f IN LISTS target_files)
    file(READ "${f}" text)
    string(REGEX MATCH "INTERFACE_LINK_LIBRARIES \"[^\"]*/[^\"]*\"" abs "${text}")
    if(abs)
      message(FATAL_ERROR "${f}: an absolute path in the exported link libraries: ${abs}")
    endif()
  endforeach()

elseif(STEP STREQUAL "build")
  file(REMOVE_RECURSE "${WORK}")
  # A copy, so that the rebuild step can touch its YAML without touching the repo.
  file(COPY "${EXAMPLE}/" DESTINATION "${src}")
  run(COMMAND "${CMAKE_COMMAND}" -S "${src}" -B "${build}" -G "${GENERATOR}"
              "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DCMAKE_C_COMPILER=${C_COMPILER}" OUT out)
  if(NOT ARCHS MATCHES "sm_90")
    expect("${out}" "sm_90 code objects of pack ${pack} are skipped")
  endif()
  run(COMMAND "${CMAKE_COMMAND}" --build "${build}")

elseif(STEP STREQUAL "run")
  foreach(exe provider_decode provider_decode_static)
    run(COMMAND "${build}/${exe}" OUT out)
    expect("${out}" "ingot 0\\.1\\.0: 1 pack\\(s\\), 1 kernel\\(s\\)")
    expect("${out}" "Hq=16 Hkv=8 Sq=1 D=128 capacity=4096: kernel ${kernel}, [0-9]+ splits, [12] launches")
    expect("${out}" "Hq=24 Hkv=8 Sq=1 D=128 capacity=4096: declined")
    expect("${out}" "no kernel has group 3 \\(kernels exist for 2\\)\n")
    expect("${out}" "group = 3, allowed range \\[2, 2\\]")
    expect("${out}" "gpu: (skipped|[a-z0-9_]+, kernel ${kernel})")
  endforeach()

elseif(STEP STREQUAL "census")
  run(COMMAND "${PREFIX}/bin/ingot" census "${pack_dir}" OUT out)
  string(REPLACE ";" ", " arch_list "${ARCHS}")
  expect("${out}" "pack ${pack}: 1 kernels, archs ${arch_list},")
  foreach(a IN LISTS ARCHS)
    expect("${out}" "\n  ${kernel} +${a} +split ")
    expect("${out}" "\n  ${a}: 1 kernels, ")
  endforeach()

elseif(STEP STREQUAL "rebuild")
  run(COMMAND "${CMAKE_COMMAND}" --build "${build}" OUT out)
  expect_not("${out}" "ingot: |Building C|Linking C")
  # The YAML: re-configured and regenerated; the same files come out, so nothing is recompiled.
  file(TOUCH "${src}/${pack}.yaml")
  run(COMMAND "${CMAKE_COMMAND}" --build "${build}" OUT out)
  expect("${out}" "ingot: generating pack ${pack}")
  expect_not("${out}" "${kernel_compile}|ingot: packaging|Building C|Linking C")
  # A template: the same.
  file(TOUCH "${PREFIX}/share/ingot/templates/attention_decode_dispatch.c.j2")
  run(COMMAND "${CMAKE_COMMAND}" --build "${build}" OUT out)
  expect("${out}" "ingot: generating pack ${pack}")
  expect_not("${out}" "${kernel_compile}|ingot: packaging|Building C|Linking C")
  # The dispatch planning header: the stub and the programs, not the kernels.
  file(TOUCH "${PREFIX}/include/ingot/dispatch/ingot_attention_decode_plan.h")
  run(COMMAND "${CMAKE_COMMAND}" --build "${build}" OUT out)
  expect("${out}" "Building C object [^\n]*${pack}_dispatch\\.c\\.o")
  expect("${out}" "Linking C executable provider_decode")
  expect_not("${out}" "${kernel_compile}|ingot: packaging|ingot: generating")
  # The kernels' arch header: every kernel, and the pack again.
  file(TOUCH "${PREFIX}/share/ingot/templates/ingot_arch.h")
  run(COMMAND "${CMAKE_COMMAND}" --build "${build}" OUT out)
  foreach(a IN LISTS ARCHS)
    expect("${out}" "${kernel_compile} ${a}")
  endforeach()
  expect("${out}" "ingot: packaging ${pack}")
  expect_not("${out}" "Building C|Linking C")

elseif(STEP STREQUAL "pkgconfig")
  if(NOT PKG_CONFIG)
    message("pkg-config not found: the pkg-config check is skipped (apt-get install pkgconf)")
    return()
  endif()
  set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
  run(COMMAND "${PKG_CONFIG}" --cflags --libs ingot OUT flags)
  expect("${flags}" "-lingot")
  run(COMMAND "${PKG_CONFIG}" --variable=packsdir ingot OUT packs)
  string(STRIP "${flags}" flags)
  string(STRIP "${packs}" packs)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(COMMAND "${PKG_CONFIG}" --variable=libdir ingot OUT libdir)
  string(STRIP "${libdir}" libdir)
  file(REMOVE_RECURSE "${WORK}-pc")
  file(MAKE_DIRECTORY "${WORK}-pc")
  unset(ENV{LD_LIBRARY_PATH})
  # The README's shared route: the rpath finds libingot.so.0 at run time.
  run(COMMAND "${C_COMPILER}" "${CMAKE_CURRENT_LIST_DIR}/pc_consumer.c" ${flags} "-Wl,-rpath,${libdir}"
              -o "${WORK}-pc/pc_consumer")
  run(COMMAND "${WORK}-pc/pc_consumer" "${packs}/attention_decode" OUT out)
  expect("${out}" "ingot 0\\.1\\.0: [1-9][0-9]* kernels in ")
  # Static libingot, shared system libraries.
  run(COMMAND "${PKG_CONFIG}" --cflags --libs ingot_static OUT sflags)
  string(STRIP "${sflags}" sflags)
  expect("${sflags}" "libingot_static\\.a")
  separate_arguments(sflags UNIX_COMMAND "${sflags}")
  run(COMMAND "${C_COMPILER}" "${CMAKE_CURRENT_LIST_DIR}/pc_consumer.c" ${sflags} -o "${WORK}-pc/pc_static")
  run(COMMAND "${WORK}-pc/pc_static" "${packs}/attention_decode" OUT out)
  expect("${out}" "ingot 0\\.1\\.0: [1-9][0-9]* kernels in ")
  find_program(READELF NAMES readelf llvm-readelf-22)
  if(READELF)
    run(COMMAND "${READELF}" -d "${WORK}-pc/pc_static" OUT dyn)
    expect_not("${dyn}" "libingot")
  endif()
  # --static: Libs.private too; with -static, libingot.a and every library linked in.
  run(COMMAND "${PKG_CONFIG}" --static --cflags --libs ingot OUT aflags)
  string(STRIP "${aflags}" aflags)
  expect("${aflags}" "-lingot .*-ljansson .*-lcrypto")
  separate_arguments(aflags UNIX_COMMAND "${aflags}")
  run(COMMAND "${C_COMPILER}" "${CMAKE_CURRENT_LIST_DIR}/pc_consumer.c" ${aflags} -static
              -o "${WORK}-pc/pc_full_static")
  run(COMMAND "${WORK}-pc/pc_full_static" "${packs}/attention_decode" OUT out)
  expect("${out}" "ingot 0\\.1\\.0: [1-9][0-9]* kernels in ")

elseif(STEP STREQUAL "append")
  set(dir "${WORK}-append")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  file(READ "${PREFIX}/share/ingot/configs/kv_append.yaml" yaml)
  string(REGEX REPLACE "\npack: kv_append\n" "\npack: provider_append\n" yaml "${yaml}")
  expect("${yaml}" "\npack: provider_append\n")
  file(WRITE "${dir}/provider_append.yaml" "${yaml}")
  string(REPLACE ";" "," arch_csv "${ARCHS}")
  run(COMMAND "${PREFIX}/bin/ingot" build "${dir}/provider_append.yaml" --out "${dir}/out" --archs "${arch_csv}"
      WORKING_DIRECTORY "${dir}" OUT out)
  expect("${out}" "compiled the dispatch library ingot_provider_append_dispatch\\.so")
  expect("${out}" "provider_append: 4 instances")
  foreach(f provider_append.kdp.json provider_append.udd.json dispatch/ingot_provider_append_dispatch.so)
    if(NOT EXISTS "${dir}/out/provider_append/${f}")
      message(FATAL_ERROR "not built: ${dir}/out/provider_append/${f}")
    endif()
  endforeach()
  run(COMMAND "${PREFIX}/bin/ingot" census "${dir}/out/provider_append" OUT out)
  expect("${out}" "pack provider_append: 4 kernels")

else()
  message(FATAL_ERROR "install_test.cmake: unknown STEP '${STEP}'")
endif()
