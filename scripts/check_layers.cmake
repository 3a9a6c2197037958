# Checks the pipeline's layers: every `#include "<folder>/..."` of a pipeline folder in
# pipeline/<folder>/*.{h,cc} (and pipeline/<folder>/internal/*.{h,cc}) must name the folder
# itself or one it may include, as pipeline/CMakeLists.txt declares them (it writes LAYERS_FILE:
# "folder: allowed folders" per line). A folder's internal/ headers are its own: an
# `#include "<folder>/internal/..."` anywhere but in pipeline/<folder>/ is a violation, in
# pipeline/ and in each of OUTSIDE_DIRS (folders beside pipeline/, searched recursively;
# tests/ is not among them: the tests check internal pieces). Also fails when a folder under
# pipeline/ is not declared. Each bad include is reported as FILE:LINE (relative to
# pipeline/'s parent); the exit status is non-zero when there is one.
#
#   cmake -DPIPELINE_DIR=<source>/pipeline -DLAYERS_FILE=<build>/pipeline/layers.txt \
#         [-DOUTSIDE_DIRS="stages;bench"] -P scripts/check_layers.cmake
cmake_minimum_required(VERSION 3.18)
foreach(var PIPELINE_DIR LAYERS_FILE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_layers.cmake: give -D${var}=...")
  endif()
endforeach()
if(NOT EXISTS ${LAYERS_FILE})
  message(FATAL_ERROR "${LAYERS_FILE}: no such file (configure the build first)")
endif()

file(STRINGS ${LAYERS_FILE} layer_lines)
set(declared "")
foreach(line ${layer_lines})
  if(NOT line MATCHES "^([a-z_0-9]+):(.*)$")
    message(FATAL_ERROR "${LAYERS_FILE}: bad line '${line}'")
  endif()
  set(folder ${CMAKE_MATCH_1})
  string(STRIP "${CMAKE_MATCH_2}" allowed)
  separate_arguments(allowed UNIX_COMMAND "${allowed}")
  set(ALLOWED_${folder} ${allowed})
  list(APPEND declared ${folder})
endforeach()

# includes: one "LINE|FOLDER|the line|INTERNAL" per `#include "FOLDER/..."` of `path`
# (INTERNAL: 1 for "FOLDER/internal/...", else 0).
# unpack_include(RECORD): a read_includes record "LINE|TARGET|SHOWN|INTERNAL" into line_no,
# target, shown and internal, and the rule an internal/ include breaks, internal_rule.
macro(unpack_include record)
  string(REPLACE "|" ";" _fields "${record}")
  list(GET _fields 0 line_no)
  list(GET _fields 1 target)
  list(GET _fields 2 shown)
  list(GET _fields 3 internal)
  set(internal_rule "pipeline/${target}/internal/ is ${target}'s own (pipeline/${target}/ and tests/ only)")
endmacro()

function(read_includes path)
  # One list element per line, empty lines kept (for the line numbers); brackets, semicolons
  # and bars, which would change how CMake splits a list (or the entries above), become spaces.
  file(READ ${path} text)
  string(REGEX REPLACE "[][;|]" " " text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(found "")
  set(line_no 0)
  foreach(line IN LISTS text)
    math(EXPR line_no "${line_no} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^/\"]+)/([^\"]*)\"")
      set(target ${CMAKE_MATCH_1})
      set(internal 0)
      if(CMAKE_MATCH_2 MATCHES "^internal/")
        set(internal 1)
      endif()
      string(STRIP "${line}" shown)
      list(APPEND found "${line_no}|${target}|${shown}|${internal}")
    endif()
  endforeach()
  set(includes ${found} PARENT_SCOPE)
endfunction()

set(problems "")
file(GLOB entries RELATIVE ${PIPELINE_DIR} ${PIPELINE_DIR}/*)
set(folders "")
foreach(entry ${entries})
  if(IS_DIRECTORY ${PIPELINE_DIR}/${entry})
    list(APPEND folders ${entry})
    if(NOT entry IN_LIST declared)
      list(APPEND problems "pipeline/${entry}/: a folder with no layer in pipeline/CMakeLists.txt (WATTCAL_LAYERS)")
    endif()
  endif()
endforeach()

set(checked 0)
foreach(folder ${folders})
  if(NOT folder IN_LIST declared)
    continue()
  endif()
  file(GLOB files RELATIVE ${PIPELINE_DIR} ${PIPELINE_DIR}/${folder}/*.h ${PIPELINE_DIR}/${folder}/*.cc
       ${PIPELINE_DIR}/${folder}/internal/*.h ${PIPELINE_DIR}/${folder}/internal/*.cc)
  list(SORT files)
  foreach(file ${files})
    math(EXPR checked "${checked} + 1")
    read_includes(${PIPELINE_DIR}/${file})
    foreach(include ${includes})
      unpack_include("${include}")
      if(target IN_LIST folders AND NOT target IN_LIST ALLOWED_${folder})
        string(REPLACE ";" ", " allowed "${ALLOWED_${folder}}")
        list(APPEND problems
             "pipeline/${file}:${line_no}: ${shown}: '${folder}' may include only ${allowed}")
      elseif(internal AND target IN_LIST folders AND NOT target STREQUAL folder)
        list(APPEND problems "pipeline/${file}:${line_no}: ${shown}: ${internal_rule}")
      endif()
    endforeach()
  endforeach()
endforeach()

# Outside pipeline/: no include of any folder's internal/.
get_filename_component(root ${PIPELINE_DIR} DIRECTORY)
foreach(dir ${OUTSIDE_DIRS})
  file(GLOB_RECURSE files RELATIVE ${root} ${root}/${dir}/*.h ${root}/${dir}/*.cc
       ${root}/${dir}/*.cuh ${root}/${dir}/*.cu ${root}/${dir}/*.c)
  list(SORT files)
  foreach(file ${files})
    math(EXPR checked "${checked} + 1")
    read_includes(${root}/${file})
    foreach(include ${includes})
      unpack_include("${include}")
      if(internal AND target IN_LIST folders)
        list(APPEND problems "${file}:${line_no}: ${shown}: ${internal_rule}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  list(LENGTH problems n)
  string(REPLACE ";" "\n" shown "${problems}")
  message("${shown}")
  message(FATAL_ERROR "${n} layer violation(s) in ${PIPELINE_DIR} (the layers are declared in pipeline/CMakeLists.txt)")
endif()
message(STATUS "pipeline layers: ${checked} files in ${PIPELINE_DIR}, every include goes down")
