# SPDX-License-Identifier: GPL-2.0
#
# cmake -DSRC=<source tree> -DOBJ=<libumcg's object dir> -P this file
#
# Fails if any header libumcg was compiled with lies in kmod/ or bpf/: the
# library shares only uapi/ with the module and the scheduler.  Reads the
# compiler's dependency files (what it really opened, relative paths and
# symlinks resolved), so it cannot be fooled by an include spelled
# "../../bpf/x.h".  Also fails when it finds nothing to check: no
# dependency files, or none that lists uapi/umcg_scx.h (backend_scx.c's).
file(GLOB_RECURSE _deps "${OBJ}/*.o.d")
if(NOT _deps)
	message(FATAL_ERROR "no dependency files under ${OBJ}: build libumcg first")
endif()
get_filename_component(_src "${SRC}" REALPATH)
get_filename_component(_want "${SRC}/uapi/umcg_scx.h" REALPATH)
set(_bad "")
set(_seen_want OFF)
set(_n 0)
foreach(_d IN LISTS _deps)
	file(READ "${_d}" _text)
	string(REPLACE "\\\n" " " _text "${_text}")
	# make's escaped space in a path (a checkout like "/tmp/a b")
	string(REPLACE "\\ " "<umcg-space>" _text "${_text}")
	string(REGEX REPLACE "[ \t\n]+" ";" _words "${_text}")
	foreach(_w IN LISTS _words)
		string(REPLACE "<umcg-space>" " " _w "${_w}")
		if(_w STREQUAL "" OR _w MATCHES ":$")
			continue()
		endif()
		if(NOT IS_ABSOLUTE "${_w}")
			continue()
		endif()
		math(EXPR _n "${_n} + 1")
		get_filename_component(_r "${_w}" REALPATH)
		if(_r STREQUAL _want)
			set(_seen_want ON)
		endif()
		foreach(_dir bpf kmod)
			string(FIND "${_r}" "${_src}/${_dir}/" _at)
			if(_at EQUAL 0)
				list(APPEND _bad "${_d}: ${_r}")
			endif()
		endforeach()
	endforeach()
endforeach()
if(_bad)
	list(JOIN _bad "\n  " _msg)
	message(FATAL_ERROR "libumcg includes headers of kmod/ or bpf/:\n  ${_msg}")
endif()
if(NOT _seen_want)
	message(FATAL_ERROR "no dependency file under ${OBJ} lists ${_want}: "
		"the check would see nothing")
endif()
list(LENGTH _deps _nd)
message(STATUS "libumcg: ${_nd} objects, ${_n} headers and sources read, "
	"none in kmod/ or bpf/")
