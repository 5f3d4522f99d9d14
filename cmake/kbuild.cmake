# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree modules, built with kbuild once per target kernel.
#
#   umcg_add_kmod(NAME SOURCES src.c... [TRACE_SOURCES src.c...]
#                 [DKMS CONF dkms.conf UAPI_HEADERS header.h...])
#
# builds ${CMAKE_CURRENT_BINARY_DIR}/<release>/NAME.ko for every release in
# UMCG_KERNELS against /usr/src/linux-headers-<release>, with uapi/ on the
# include path, as part of "all" (unless UMCG_BUILD_KMOD is OFF).  kbuild writes its objects next to the
# sources, so the sources are copied into the per-release directory and a
# Kbuild file is generated there; cmake/kbuild-make runs kbuild on it.
# TRACE_SOURCES (also in SOURCES) define tracepoints (CREATE_TRACE_POINTS):
# they are compiled with the module's directory on the include path, where
# trace/define_trace.h finds a trace header whose TRACE_INCLUDE_PATH is ".".
#
# DKMS: install (component "dkms") a self-contained DKMS source tree,
# <prefix>/src/NAME-<version>: the sources and headers, the UAPI_HEADERS of
# uapi/ in its uapi/, a Kbuild made from the same lists as the one above
# (without -Werror: a user's newer compiler may warn where ours does not),
# a Makefile that runs kbuild for KDIR (default: the running kernel's
# build directory), and CONF configured (@PROJECT_VERSION@) as dkms.conf.
function(umcg_add_kmod name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "DKMS" "CONF"
		"SOURCES;TRACE_SOURCES;UAPI_HEADERS")
	set(objs "")
	set(srcs "")
	foreach(s IN LISTS arg_SOURCES)
		get_filename_component(base ${s} NAME_WE)
		list(APPEND objs ${base}.o)
		list(APPEND srcs ${CMAKE_CURRENT_SOURCE_DIR}/${s})
	endforeach()
	file(GLOB hdrs ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
	list(JOIN objs " " objs)
	if(objs STREQUAL "${name}.o")
		set(kbuild "obj-m := ${name}.o\n")
	else()
		set(kbuild "obj-m := ${name}.o\n${name}-y := ${objs}\n")
	endif()
	# UMCG_UAPI: set by cmake/kbuild-make.
	string(APPEND kbuild "ccflags-y := -I$(UMCG_UAPI) -Werror\n")
	foreach(s IN LISTS arg_TRACE_SOURCES)
		get_filename_component(base ${s} NAME_WE)
		string(APPEND kbuild "CFLAGS_${base}.o := -I$(src)\n")
	endforeach()

	if(arg_DKMS)
		umcg_kmod_dkms_tree(${name} "${kbuild}" "${srcs}" "${hdrs}"
			${arg_CONF} "${arg_UAPI_HEADERS}")
	endif()
	if(NOT UMCG_BUILD_KMOD)
		return()
	endif()

	foreach(rel IN LISTS UMCG_KERNELS)
		set(out ${CMAKE_CURRENT_BINARY_DIR}/${rel})
		set(kdir /usr/src/linux-headers-${rel})
		file(MAKE_DIRECTORY ${out})
		file(CONFIGURE OUTPUT ${out}/Kbuild CONTENT "${kbuild}")
		add_custom_command(
			OUTPUT ${out}/${name}.ko
			COMMAND ${CMAKE_COMMAND} -E copy_if_different ${srcs} ${hdrs} ${out}
			COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/kbuild-make ${kdir} ${out}
				${UMCG_UAPI_DIR} modules
			DEPENDS ${srcs} ${hdrs} ${out}/Kbuild ${UMCG_UAPI_DIR}/umcg.h
			WORKING_DIRECTORY ${out}
			COMMENT "kbuild ${name}.ko for ${rel}"
			VERBATIM)
		add_custom_target(${name}-${rel} ALL DEPENDS ${out}/${name}.ko)
	endforeach()
endfunction()

# The DKMS source tree of umcg_add_kmod(... DKMS ...).
function(umcg_kmod_dkms_tree name kbuild srcs hdrs conf uapi_headers)
	set(dir ${CMAKE_CURRENT_BINARY_DIR}/dkms)
	string(REPLACE "-I$(UMCG_UAPI) -Werror" "-I$(src)/uapi" kbuild "${kbuild}")
	file(CONFIGURE OUTPUT ${dir}/Kbuild CONTENT "${kbuild}")
	file(CONFIGURE OUTPUT ${dir}/Makefile CONTENT
"# SPDX-License-Identifier: GPL-2.0
# ${name}.ko: make [KDIR=/lib/modules/<release>/build] [modules|clean]
KDIR ?= /lib/modules/$(shell uname -r)/build

modules clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) $@

.PHONY: modules clean
")
	configure_file(${conf} ${dir}/dkms.conf @ONLY)
	set(dest ${CMAKE_INSTALL_PREFIX}/src/${name}-${PROJECT_VERSION})
	install(FILES ${srcs} ${hdrs} ${dir}/Kbuild ${dir}/Makefile ${dir}/dkms.conf
		DESTINATION ${dest} COMPONENT dkms)
	list(TRANSFORM uapi_headers PREPEND ${UMCG_UAPI_DIR}/)
	install(FILES ${uapi_headers} DESTINATION ${dest}/uapi COMPONENT dkms)
endfunction()
