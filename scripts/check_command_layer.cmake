# The command layer (stages/) binds flags and calls one use-case entry point per stage; the
# science between reading and writing lives in the library (pipeline/usecases/ and below). This
# fails, naming FILE:LINE, when a file in stages/ calls one of the library's use-case internals:
# the training-row selection, the auto method, the indistinguishable rows, the power-limit rule.
#
# The Python module's native part (python/src/) is such a layer too.
#
#   cmake -DSTAGES_DIR=<source>/stages [-DSHOWN=stages] -P scripts/check_command_layer.cmake
cmake_minimum_required(VERSION 3.18)
if(NOT DEFINED STAGES_DIR)
  message(FATAL_ERROR "check_command_layer.cmake: give -DSTAGES_DIR=...")
endif()
if(NOT DEFINED SHOWN)
  set(SHOWN stages)
endif()
set(forbidden SelectTrainingRows AutoFitMethod FindIndistinguishableRows ResolvePowerLimitW)
file(GLOB files RELATIVE ${STAGES_DIR} ${STAGES_DIR}/*.h ${STAGES_DIR}/*.cc)
list(SORT files)
set(problems "")
foreach(file ${files})
  file(STRINGS ${STAGES_DIR}/${file} lines)
  set(line_no 0)
  foreach(line IN LISTS lines)
    math(EXPR line_no "${line_no} + 1")
    foreach(name ${forbidden})
      if(line MATCHES "(^|[^A-Za-z0-9_])${name}[ \t]*\\(")
        list(APPEND problems "${SHOWN}/${file}:${line_no}: calls ${name}: a use case's internals belong in pipeline/usecases/")
      endif()
    endforeach()
  endforeach()
endforeach()
if(problems)
  list(LENGTH problems n)
  string(REPLACE ";" "\n" shown "${problems}")
  message("${shown}")
  message(FATAL_ERROR "${n} call(s) from the command layer into the use cases' internals")
endif()
list(LENGTH files n)
message(STATUS "command layer: ${n} files in ${STAGES_DIR}, none calls ${forbidden}")
