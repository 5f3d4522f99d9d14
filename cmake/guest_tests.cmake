# SPDX-License-Identifier: GPL-2.0
#
# Guest tests: programs that tools/umcg-vm runs inside the test VM, one after
# another, on every target kernel.  Each is a kselftest-harness program (TAP
# output; exit 0 pass, 4 skip, anything else fail).
#
#   umcg_add_guest_test(NAME SOURCES src... [LIBS lib...] [LIST list]
#                       [TIMEOUT seconds])
#
# adds the executable tests/guest/NAME and lists it in
# ${CMAKE_BINARY_DIR}/tests/<list>.list (default list: "guest"), the file the
# test command hands to the VM runner.  Lists other than "guest" are for
# runner self-tests, which are expected to fail in a given way.  TIMEOUT:
# tests/guest/NAME.timeout, as for umcg_add_guest_script() below.
function(umcg_add_guest_test name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "" "LIST;TIMEOUT" "SOURCES;LIBS")
	if(NOT arg_LIST)
		set(arg_LIST guest)
	endif()
	if(arg_TIMEOUT)
		file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/tests/guest/${name}.timeout
			CONTENT "${arg_TIMEOUT}\n")
	endif()
	add_executable(${name} ${arg_SOURCES})
	target_link_libraries(${name} PRIVATE umcg::kselftest ${arg_LIBS})
	target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
	set_target_properties(${name} PROPERTIES
		RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/guest)
	set_property(GLOBAL APPEND PROPERTY UMCG_GUEST_LISTS ${arg_LIST})
	set_property(GLOBAL APPEND PROPERTY UMCG_GUEST_LIST_${arg_LIST}
		${CMAKE_BINARY_DIR}/tests/guest/${name})
endfunction()

function(umcg_guest_tests_finish)
	get_property(lists GLOBAL PROPERTY UMCG_GUEST_LISTS)
	list(REMOVE_DUPLICATES lists)
	foreach(l IN LISTS lists)
		get_property(tests GLOBAL PROPERTY UMCG_GUEST_LIST_${l})
		list(JOIN tests "\n" body)
		file(WRITE ${CMAKE_BINARY_DIR}/tests/${l}.list.tmp "${body}\n")
		file(COPY_FILE ${CMAKE_BINARY_DIR}/tests/${l}.list.tmp
			${CMAKE_BINARY_DIR}/tests/${l}.list ONLY_IF_DIFFERENT)
	endforeach()
endfunction()

# umcg_add_guest_script(NAME SCRIPT [LIST list] [TIMEOUT seconds]): a guest
# test written as a script; SCRIPT is configured (@PROJECT_SOURCE_DIR@,
# @PROJECT_BINARY_DIR@, @PROJECT_VERSION@) into tests/guest/NAME and listed
# like a program.  It prints the same TAP shape and exits like one (0 pass,
# 4 skip, else fail).  TIMEOUT: tests/guest/NAME.timeout, which the guest's
# runner (tools/vm/guest-run) takes when it is longer than its own timeout.
function(umcg_add_guest_script name script)
	cmake_parse_arguments(PARSE_ARGV 2 arg "" "LIST;TIMEOUT" "")
	if(arg_TIMEOUT)
		file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/tests/guest/${name}.timeout
			CONTENT "${arg_TIMEOUT}\n")
	endif()
	if(NOT arg_LIST)
		set(arg_LIST guest)
	endif()
	configure_file(${script} ${CMAKE_BINARY_DIR}/tests/guest/${name} @ONLY
		FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
			GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
	set_property(GLOBAL APPEND PROPERTY UMCG_GUEST_LISTS ${arg_LIST})
	set_property(GLOBAL APPEND PROPERTY UMCG_GUEST_LIST_${arg_LIST}
		${CMAKE_BINARY_DIR}/tests/guest/${name})
endfunction()
