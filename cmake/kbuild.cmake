# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree modules, built with kbuild once per target kernel.
#
#   umcg_add_kmod(NAME SOURCES src.c... [TRACE_SOURCES src.c...])
#
# builds ${CMAKE_CURRENT_BINARY_DIR}/<release>/NAME.ko for every release in
# UMCG_KERNELS against /usr/src/linux-headers-<release>, with uapi/ on the
# include path, as part of "all".  kbuild writes its objects next to the
# sources, so the sources are copied into the per-release directory and a
# Kbuild file is generated there; cmake/kbuild-make runs kbuild on it.
# TRACE_SOURCES (also in SOURCES) define tracepoints (CREATE_TRACE_POINTS):
# they are compiled with the module's directory on the include path, where
# trace/define_trace.h finds a trace header whose TRACE_INCLUDE_PATH is ".".
function(umcg_add_kmod name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;TRACE_SOURCES")
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
