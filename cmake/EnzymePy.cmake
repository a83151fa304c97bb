# enzyme_py's C front end for CMake projects: targets whose C sources may call
# __enzyme_autodiff / __enzyme_fwddiff (Enzyme's conventions), compiled by `enzyme-py clang`.
#
#   include(path/to/enzyme_py/cmake/EnzymePy.cmake)
#   enzyme_py_add_executable(name sources...)      # like add_executable
#   enzyme_py_add_library(name [STATIC|SHARED] sources...)   # like add_library
#
# Needs clang-22 as the C compiler (-DCMAKE_C_COMPILER=clang-22) and a Python that imports
# enzyme_py (ENZYME_PY_PYTHON, default: python3 on PATH).
include_guard(GLOBAL)

if(NOT ENZYME_PY_PYTHON)
  find_program(ENZYME_PY_PYTHON NAMES python3 python REQUIRED)
endif()
set(ENZYME_PY_PYTHONPATH "" CACHE STRING "PYTHONPATH for enzyme_py (empty: installed)")
set(_enzyme_py_env)
if(ENZYME_PY_PYTHONPATH)
  set(_enzyme_py_env ${CMAKE_COMMAND} -E env "PYTHONPATH=${ENZYME_PY_PYTHONPATH}")
endif()
execute_process(COMMAND ${_enzyme_py_env} ${ENZYME_PY_PYTHON} -c "import enzyme_py.c"
                RESULT_VARIABLE _enzyme_py_missing OUTPUT_QUIET ERROR_QUIET)
if(_enzyme_py_missing)
  message(FATAL_ERROR "${ENZYME_PY_PYTHON} cannot import enzyme_py: pip install it, or set "
                      "ENZYME_PY_PYTHON / ENZYME_PY_PYTHONPATH")
endif()
set(ENZYME_PY_LAUNCHER ${_enzyme_py_env} ${ENZYME_PY_PYTHON} -m enzyme_py clang
    --compiler-launcher)

function(_enzyme_py_setup target)
  set_target_properties(${target} PROPERTIES C_COMPILER_LAUNCHER "${ENZYME_PY_LAUNCHER}")
  target_link_libraries(${target} PRIVATE m)   # derivatives call libm
endfunction()

function(enzyme_py_add_executable name)
  add_executable(${name} ${ARGN})
  _enzyme_py_setup(${name})
endfunction()

function(enzyme_py_add_library name)
  add_library(${name} ${ARGN})
  _enzyme_py_setup(${name})
endfunction()
