# IngotPack.cmake: ingot_add_pack(), the build of one kernel pack:
#   YAML config -> generator -> HIP sources, dispatch stub, descriptors
#   -> clang-22 (gfx942, gfx950) and nvcc (sm_90) code objects
#   -> `ingot package`: the packaged pack folder the runtime opens.
# Used by ingot's own build and, installed, by provider builds (ingotConfig.cmake).
#
#   ingot_add_pack(NAME <pack> CONFIG <file.yaml> OUTPUT_DIR <pack folder>
#                  [ARCHS <arch>...]            default: the config's archs
#                  [GENERATED_ROOT <dir>]       default: <current binary dir>/ingot_generated
#                  [DISPATCH_SOURCES <var>])    receives the generated dispatch stub (.c)
#
# Targets: ingot_pack_<pack> (ALL: generate, compile, package), ingot_generate_<pack>,
# and, where C is enabled, ingot_dispatch_<pack>: an OBJECT library (built only when
# linked) holding the pack's dispatch stub. Link it into the executable (or shared
# library) that opens the pack: it exports the stub's symbol ingot_<pack>_dispatch
# to the dynamic symbol table (like ENABLE_EXPORTS, for that one symbol), where the
# runtime finds it with dlsym.
#
# Needs: INGOT_GENERATOR_DIR (where the `ingot` package is), INGOT_TEMPLATE_DIR,
# INGOT_DISPATCH_INCLUDE_DIRS (where dispatch.h, ingot/ingot.h and the planners are); finds the
# toolchain with ingot_find_tools() (IngotTools.cmake).

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/IngotTools.cmake")

function(ingot_add_pack)
  cmake_parse_arguments(P "" "NAME;CONFIG;GENERATED_ROOT;OUTPUT_DIR;DISPATCH_SOURCES" "ARCHS" ${ARGN})
  foreach(req NAME CONFIG OUTPUT_DIR)
    if(NOT P_${req})
      message(FATAL_ERROR "ingot_add_pack: missing ${req}")
    endif()
  endforeach()
  if(NOT P_GENERATED_ROOT)
    set(P_GENERATED_ROOT "${CMAKE_CURRENT_BINARY_DIR}/ingot_generated")
  endif()
  ingot_find_tools()
  get_filename_component(config "${P_CONFIG}" ABSOLUTE)
  set(env ${CMAKE_COMMAND} -E env "PYTHONPATH=${INGOT_GENERATOR_DIR}" "INGOT_TEMPLATE_DIR=${INGOT_TEMPLATE_DIR}")

  # The instance list decides the build graph; a config edit re-runs this.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${config}")
  execute_process(COMMAND ${env} ${INGOT_PYTHON} -m ingot list --json "${config}"
                  OUTPUT_VARIABLE listing ERROR_VARIABLE list_err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ingot_add_pack(${P_NAME}): the config has errors:\n${list_err}")
  endif()
  string(JSON pack GET "${listing}" 0 pack)
  if(NOT pack STREQUAL P_NAME)
    message(FATAL_ERROR "ingot_add_pack: ${config} defines pack '${pack}', not '${P_NAME}'")
  endif()
  string(JSON n_inst LENGTH "${listing}" 0 instances)
  string(JSON n_files LENGTH "${listing}" 0 files)
  string(JSON n_archs LENGTH "${listing}" 0 archs)
  set(pack_archs)
  math(EXPR last "${n_archs} - 1")
  foreach(i RANGE ${last})
    string(JSON a GET "${listing}" 0 archs ${i})
    list(APPEND pack_archs ${a})
  endforeach()
  if(P_ARCHS)
    set(want ${P_ARCHS})
  else()
    set(want ${pack_archs})
  endif()
  # Per arch, the compiler and its flags come from the generator's arch table
  # (`compile` in the listing: ["clang" | "nvcc", flag...]); none are written here.
  set(archs)
  foreach(a IN LISTS want)
    if(NOT a IN_LIST pack_archs)
      message(FATAL_ERROR "ingot_add_pack(${P_NAME}): arch ${a} is not in the config (it has: ${pack_archs})")
    endif()
    string(JSON n_words LENGTH "${listing}" 0 compile ${a})
    string(JSON compiler_${a} GET "${listing}" 0 compile ${a} 0)
    set(flags_${a})
    math(EXPR last "${n_words} - 1")
    foreach(i RANGE 1 ${last})
      string(JSON f GET "${listing}" 0 compile ${a} ${i})
      list(APPEND flags_${a} "${f}")
    endforeach()
    if(compiler_${a} STREQUAL "nvcc")
      if(NOT INGOT_NVCC)
        message(WARNING "ingot: nvcc not found; ${a} code objects of pack ${P_NAME} are skipped")
        continue()
      endif()
    elseif(NOT compiler_${a} STREQUAL "clang")
      message(FATAL_ERROR "ingot_add_pack(${P_NAME}): arch ${a} names compiler '${compiler_${a}}' "
                          "(allowed: clang, nvcc)")
    endif()
    list(APPEND archs ${a})
  endforeach()

  set(gen_dir "${P_GENERATED_ROOT}/${P_NAME}")
  set(gen_outputs)
  math(EXPR last "${n_files} - 1")
  foreach(i RANGE ${last})
    string(JSON f GET "${listing}" 0 files ${i})
    list(APPEND gen_outputs "${gen_dir}/${f}")
  endforeach()
  file(GLOB_RECURSE generator_sources CONFIGURE_DEPENDS "${INGOT_GENERATOR_DIR}/ingot/*.py")
  # The generator reads the Jinja templates; the headers beside them are the compilers' business.
  file(GLOB templates CONFIGURE_DEPENDS "${INGOT_TEMPLATE_DIR}/*.j2")
  add_custom_command(
    OUTPUT ${gen_outputs}
    COMMAND ${env} ${INGOT_PYTHON} -m ingot generate --quiet --out "${P_GENERATED_ROOT}" "${config}"
    DEPENDS "${config}" ${generator_sources} ${templates}
    COMMENT "ingot: generating pack ${P_NAME}"
    VERBATIM)

  set(obj_root "${CMAKE_CURRENT_BINARY_DIR}/ingot_objects/${P_NAME}")
  set(objects)
  math(EXPR last "${n_inst} - 1")
  foreach(i RANGE ${last})
    string(JSON inst GET "${listing}" 0 instances ${i})
    foreach(a IN LISTS archs)
      set(src "${gen_dir}/kernels/${a}/${inst}.hip")
      if(NOT src IN_LIST gen_outputs)
        continue()  # a variant built for some of the pack's archs only
      endif()
      # `depfile`: each compile also writes the headers it read, so a header edit rebuilds
      # the kernels that include it and nothing else.
      if(compiler_${a} STREQUAL "nvcc")
        set(obj "${obj_root}/${a}/${inst}.${a}.cubin")
        set(cmd ${INGOT_NVCC} ${flags_${a}} -I "${INGOT_TEMPLATE_DIR}" -o "${obj}" "${src}")
        set(depfile -MD -MF "${obj}.d")
      else()
        set(obj "${obj_root}/${a}/${inst}.${a}.co")
        set(cmd ${INGOT_CLANG} ${flags_${a}} -I "${INGOT_TEMPLATE_DIR}" -o "${obj}" "${src}")
        # clang's driver writes no depfile for a device-only job (-MD); cc1 does, asked directly.
        set(depfile -Xclang -dependency-file -Xclang "${obj}.d" -Xclang -MT -Xclang "${obj}")
      endif()
      add_custom_command(OUTPUT "${obj}"
                         COMMAND ${CMAKE_COMMAND} -E make_directory "${obj_root}/${a}"
                         COMMAND ${cmd} ${depfile}
                         DEPENDS "${src}"
                         DEPFILE "${obj}.d"
                         COMMENT "ingot: ${inst} for ${a}"
                         VERBATIM)
      list(APPEND objects "${obj}")
    endforeach()
  endforeach()

  string(REPLACE ";" "," arch_csv "${archs}")
  set(stamp "${P_OUTPUT_DIR}/${P_NAME}.kdp.json")
  add_custom_command(
    OUTPUT "${stamp}"
    COMMAND ${env} ${INGOT_PYTHON} -m ingot package --quiet --generated "${gen_dir}" --objects "${obj_root}"
            --out "${P_OUTPUT_DIR}" --archs "${arch_csv}" --readelf "${INGOT_READELF}"
            --objdump "${INGOT_OBJDUMP}"
    # the generator too: a change to what packaging writes (package.py) repackages
    DEPENDS ${objects} ${gen_outputs} ${generator_sources}
    COMMENT "ingot: packaging ${P_NAME} (${arch_csv})"
    VERBATIM)
  add_custom_target(ingot_pack_${P_NAME} ALL DEPENDS "${stamp}")
  add_custom_target(ingot_generate_${P_NAME} DEPENDS ${gen_outputs})
  set(stub "${gen_dir}/dispatch/${P_NAME}_dispatch.c")
  if(P_DISPATCH_SOURCES)
    set(${P_DISPATCH_SOURCES} "${stub}" PARENT_SCOPE)
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("C" IN_LIST languages)
    add_library(ingot_dispatch_${P_NAME} OBJECT EXCLUDE_FROM_ALL "${stub}")
    # dispatch.h, ingot/ingot.h and the families' planners; the stub's own header;
    # the templates (the limits a planner shares with its kernels).
    target_include_directories(ingot_dispatch_${P_NAME} PRIVATE ${INGOT_DISPATCH_INCLUDE_DIRS}
                               "${gen_dir}/dispatch" "${INGOT_TEMPLATE_DIR}")
    set_target_properties(ingot_dispatch_${P_NAME} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
                          POSITION_INDEPENDENT_CODE ON)
    add_dependencies(ingot_dispatch_${P_NAME} ingot_generate_${P_NAME})
    target_link_options(ingot_dispatch_${P_NAME} INTERFACE
                        "LINKER:--export-dynamic-symbol=ingot_${P_NAME}_dispatch")
  else()
    message(STATUS "ingot_add_pack(${P_NAME}): C is not enabled, so no target ingot_dispatch_${P_NAME}; "
                   "compile DISPATCH_SOURCES into the program and export ingot_${P_NAME}_dispatch")
  endif()
  set_property(GLOBAL APPEND PROPERTY INGOT_PACK_DIRS "${P_OUTPUT_DIR}")
endfunction()
