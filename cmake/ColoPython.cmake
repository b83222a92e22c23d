# COLO_PYTHON: the python3 whose torch is the LibTorch colo builds against
# (the one on PATH, else Debian's). colo._core is built for it, the Python
# tests run under it, and colo runs it to estimate a Python job's model.
set(COLO_PYTHON "" CACHE FILEPATH "python3 that imports the torch colo is built against")
if(NOT COLO_PYTHON)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _colo_torch_mm "${Torch_VERSION}")
  foreach(candidate python3 /usr/bin/python3)
    execute_process(COMMAND ${candidate} -c "import torch, sys; sys.stdout.write(torch.__version__)"
                    OUTPUT_VARIABLE _colo_py_torch RESULT_VARIABLE _colo_rc ERROR_QUIET)
    if(_colo_rc EQUAL 0 AND _colo_py_torch MATCHES "^${_colo_torch_mm}")
      find_program(_colo_python_path ${candidate})
      set(COLO_PYTHON ${_colo_python_path} CACHE FILEPATH "" FORCE)
      break()
    endif()
  endforeach()
endif()
if(NOT COLO_PYTHON)
  message(FATAL_ERROR "no python3 imports torch ${Torch_VERSION}: run scripts/install-deps.sh (Debian python3-torch)")
endif()

