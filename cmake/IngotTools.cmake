# IngotTools.cmake: ingot_find_tools(), the toolchain that casts a pack's kernels.
# Used by ingot's own build (at configure time) and by the installed package
# (the first time a provider calls ingot_add_pack, so a project that only links
# the runtime needs none of it).
#
# Sets (cache): INGOT_CLANG (clang-22), INGOT_LLD (ld.lld-22, which clang-22 links
# AMDGPU code objects with), INGOT_READELF (llvm-readelf-22), INGOT_OBJDUMP
# (llvm-objdump-22, the AMD disassembly), INGOT_NVCC (on PATH
# or in /usr/local/cuda/bin; empty when missing: sm_90 is skipped with a warning)
# and INGOT_PYTHON (Debian's /usr/bin/python3, which has jinja2 and yaml; a
# python3 earlier on PATH, from pyenv or a venv, may lack them). A missing
# required tool is a fatal error naming the package to install.

include_guard(GLOBAL)

macro(ingot_find_tools)
  find_program(INGOT_CLANG NAMES clang-22)
  if(NOT INGOT_CLANG)
    message(FATAL_ERROR "clang-22 not found: the AMDGPU code objects need it (apt-get install clang-22)")
  endif()
  find_program(INGOT_LLD NAMES ld.lld-22)
  if(NOT INGOT_LLD)
    message(FATAL_ERROR "ld.lld-22 not found: clang-22 links AMDGPU code objects with it (apt-get install lld-22)")
  endif()
  find_program(INGOT_READELF NAMES llvm-readelf-22)
  if(NOT INGOT_READELF)
    message(FATAL_ERROR "llvm-readelf-22 not found: packaging reads code-object metadata with it (apt-get install llvm-22)")
  endif()
  find_program(INGOT_OBJDUMP NAMES llvm-objdump-22)
  if(NOT INGOT_OBJDUMP)
    message(FATAL_ERROR "llvm-objdump-22 not found: packaging counts AGPR spills in the AMD disassembly with it (apt-get install llvm-22)")
  endif()
  find_program(INGOT_NVCC NAMES nvcc HINTS /usr/local/cuda/bin)
  if(NOT INGOT_NVCC)
    get_property(_ingot_warned GLOBAL PROPERTY INGOT_NVCC_WARNED)
    if(NOT _ingot_warned)
      message(WARNING "nvcc not found (looked on PATH and in /usr/local/cuda/bin): sm_90 code objects are skipped")
      set_property(GLOBAL PROPERTY INGOT_NVCC_WARNED TRUE)
    endif()
    set(INGOT_NVCC "")
  endif()
  if(NOT INGOT_PYTHON)
    if(EXISTS /usr/bin/python3)
      set(INGOT_PYTHON /usr/bin/python3 CACHE FILEPATH "python3 with jinja2 and yaml, for the ingot generator")
    else()
      find_program(INGOT_PYTHON NAMES python3 REQUIRED)
    endif()
  endif()
  get_property(_ingot_py_ok GLOBAL PROPERTY INGOT_PYTHON_CHECKED)
  if(NOT _ingot_py_ok STREQUAL INGOT_PYTHON)
    execute_process(COMMAND ${INGOT_PYTHON} -c "import jinja2, yaml" RESULT_VARIABLE _ingot_py_rc ERROR_QUIET)
    if(NOT _ingot_py_rc EQUAL 0)
      message(FATAL_ERROR "${INGOT_PYTHON} lacks jinja2 or yaml (apt-get install python3-jinja2 python3-yaml)")
    endif()
    set_property(GLOBAL PROPERTY INGOT_PYTHON_CHECKED "${INGOT_PYTHON}")
  endif()
endmacro()
