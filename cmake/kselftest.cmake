# SPDX-License-Identifier: GPL-2.0
#
# The kernel's kselftest harness ships in Debian only inside linux-source-X.
# Extract kselftest_harness.h and kselftest.h from it at build time; they are
# never committed.  Provides the interface library umcg::kselftest.
file(GLOB _ksrc /usr/src/linux-source-*.tar.xz)
list(SORT _ksrc COMPARE NATURAL ORDER DESCENDING)
set(UMCG_LINUX_SOURCE "")
if(_ksrc)
	list(GET _ksrc 0 UMCG_LINUX_SOURCE)
endif()
set(UMCG_HAVE_KSELFTEST ON)
if(NOT UMCG_LINUX_SOURCE)
	message(STATUS "umcg: no /usr/src/linux-source-*.tar.xz, so no kselftest "
		"harness: not building the tests (apt-get install linux-source, or "
		"build inside tools/umcg-root)")
	set(UMCG_HAVE_KSELFTEST OFF)
	return()
endif()
string(REGEX REPLACE "^.*/(linux-source-[^/]*)\\.tar\\.xz$" "\\1" _ktop "${UMCG_LINUX_SOURCE}")

set(UMCG_KSELFTEST_DIR ${CMAKE_BINARY_DIR}/include/kselftest)
set(_sel tools/testing/selftests)
add_custom_command(
	OUTPUT ${UMCG_KSELFTEST_DIR}/kselftest_harness.h ${UMCG_KSELFTEST_DIR}/kselftest.h
	COMMAND ${CMAKE_COMMAND} -E make_directory ${UMCG_KSELFTEST_DIR}
	COMMAND tar -xJf ${UMCG_LINUX_SOURCE} -C ${UMCG_KSELFTEST_DIR}
		--strip-components=4
		${_ktop}/${_sel}/kselftest_harness.h ${_ktop}/${_sel}/kselftest.h
	COMMAND ${CMAKE_COMMAND} -E touch ${UMCG_KSELFTEST_DIR}/kselftest_harness.h
		${UMCG_KSELFTEST_DIR}/kselftest.h
	DEPENDS ${UMCG_LINUX_SOURCE}
	COMMENT "Extracting the kselftest harness from ${_ktop}"
	VERBATIM)
add_custom_target(kselftest_headers DEPENDS
	${UMCG_KSELFTEST_DIR}/kselftest_harness.h ${UMCG_KSELFTEST_DIR}/kselftest.h)

add_library(umcg_kselftest INTERFACE)
add_library(umcg::kselftest ALIAS umcg_kselftest)
target_include_directories(umcg_kselftest SYSTEM INTERFACE ${UMCG_KSELFTEST_DIR})
add_dependencies(umcg_kselftest kselftest_headers)
