# IngotInstall.cmake: what `cmake --install` puts under the prefix besides the
# runtime's own files (runtime/CMakeLists.txt: libingot, ingot-inspect, headers):
#
#   bin/ingot                              the generator, run as `ingot` (a wrapper script)
#   share/ingot/python/ingot/              the generator's Python package
#   share/ingot/templates/                 templates and the hand-written kernel/dispatch headers
#   share/ingot/configs/                   the shipped packs' configs (attention_decode.yaml, kv_append.yaml)
#   share/ingot/packs/<pack>/              the packaged packs (their dispatch stubs are in libingot)
#   lib/cmake/ingot/                       ingotConfig.cmake, ingotConfigVersion.cmake, the
#                                          exported targets ingot::runtime and ingot::runtime_static,
#                                          IngotPack.cmake (ingot_add_pack) and IngotTools.cmake
#   lib/pkgconfig/ingot.pc, ingot_static.pc  (shared; static libingot); lib/libingot.a -> libingot_static.a
#
# Every installed path is relative to the prefix, so `cmake --install --prefix P`
# gives a working tree wherever P is.

include(CMakePackageConfigHelpers)

set(INGOT_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/ingot")
set(INGOT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/ingot")
set(INGOT_INSTALL_DISPATCHDIR "${CMAKE_INSTALL_INCLUDEDIR}/ingot/dispatch")

# ---- the generator and what it reads ----------------------------------------
install(DIRECTORY "${INGOT_GENERATOR_DIR}/ingot" DESTINATION "${INGOT_INSTALL_DATADIR}/python"
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY "${INGOT_TEMPLATE_DIR}/" DESTINATION "${INGOT_INSTALL_DATADIR}/templates")
install(FILES "${PROJECT_SOURCE_DIR}/configs/attention_decode.yaml" "${PROJECT_SOURCE_DIR}/configs/kv_append.yaml"
        DESTINATION "${INGOT_INSTALL_DATADIR}/configs")

file(RELATIVE_PATH INGOT_BIN_TO_DATA "/${CMAKE_INSTALL_BINDIR}" "/${INGOT_INSTALL_DATADIR}")
configure_file(cmake/ingot.sh.in "${PROJECT_BINARY_DIR}/install/ingot" @ONLY)
install(PROGRAMS "${PROJECT_BINARY_DIR}/install/ingot" DESTINATION "${CMAKE_INSTALL_BINDIR}")

# ---- the packs whose dispatch stubs libingot carries --------------------------
install(DIRECTORY "${INGOT_PACKS_DIR}/attention_decode" "${INGOT_PACKS_DIR}/kv_append"
        DESTINATION "${INGOT_INSTALL_DATADIR}/packs")

# ---- the CMake package ---------------------------------------------------------
if(TARGET ingot)
  install(EXPORT ingotTargets NAMESPACE ingot:: DESTINATION "${INGOT_INSTALL_CMAKEDIR}")
endif()
configure_package_config_file(cmake/ingotConfig.cmake.in "${PROJECT_BINARY_DIR}/install/ingotConfig.cmake"
  INSTALL_DESTINATION "${INGOT_INSTALL_CMAKEDIR}"
  PATH_VARS INGOT_INSTALL_DATADIR INGOT_INSTALL_DISPATCHDIR CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# 0.x: a minor version may change the ABI.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/install/ingotConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/install/ingotConfig.cmake"
              "${PROJECT_BINARY_DIR}/install/ingotConfigVersion.cmake"
              cmake/IngotPack.cmake cmake/IngotTools.cmake
        DESTINATION "${INGOT_INSTALL_CMAKEDIR}")

# ---- pkg-config ------------------------------------------------------------------
file(RELATIVE_PATH INGOT_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(cmake/ingot.pc.in "${PROJECT_BINARY_DIR}/install/ingot.pc" @ONLY)
configure_file(cmake/ingot_static.pc.in "${PROJECT_BINARY_DIR}/install/ingot_static.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/install/ingot.pc" "${PROJECT_BINARY_DIR}/install/ingot_static.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
# libingot.a: the static library by its conventional name, so that a -static link of -lingot finds it.
install(CODE "execute_process(COMMAND \"\${CMAKE_COMMAND}\" -E create_symlink libingot_static.a
  \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libingot.a\")")
