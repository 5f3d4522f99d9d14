# SPDX-License-Identifier: GPL-2.0
#
# Guest tests: programs that tools/umcg-vm runs inside the test VM, one after
# another, on every target kernel.  Each is a kselftest-harness program (TAP
# output; exit 0 pass, 4 skip, anything else fail).
#
#   umcg_add_guest_test(NAME SOURCES src... [LIBS lib...] [LIST list])
#
# adds the executable tests/guest/NAME and lists it in
# ${CMAKE_BINARY_DIR}/tests/<list>.list (default list: "guest"), the file the
# test command hands to the VM runner.  Lists other than "guest" are for
# runner self-tests, which are expected to fail in a given way.
function(umcg_add_guest_test name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "" "LIST" "SOURCES;LIBS")
	if(NOT arg_LIST)
		set(arg_LIST guest)
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
