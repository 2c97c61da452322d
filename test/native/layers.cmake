# The layers' include rule, checked on every file under native/ (a ctest: cmake -P).
# A file may include its own layer and the layers below it:
#   common  <- device, state, policy, host, compute, runtime, interop, binding
#   device  <- policy, host, compute, runtime, interop, binding (the binding not device/cuda/: it asks device/select)
#   host    <- compute, runtime, interop, binding
#   state   <- policy, compute, runtime, interop, binding
#   policy  <- compute, runtime, interop, binding
#   compute <- runtime, interop, binding
#   runtime <- interop, binding
#   interop <- binding; these two alone include the public C header, include/cca.h
#   wasm: common, device (not device/cuda/), state, policy; nothing includes it
# The libraries link the same way (CMakeLists.txt), so a call upward does not link either.
cmake_minimum_required(VERSION 3.15)
get_filename_component(native "${CMAKE_CURRENT_LIST_DIR}/../../native" ABSOLUTE)

# Each folder and its layer, the most specific folder first (device/cuda/ before device/).
set(layer_folders ../include/=public-header common/=common device/cuda/=device-cuda device/=device allocator/state/=state
    allocator/policy/=policy wasm/=wasm host/=host compute/=compute runtime/=runtime interop/=interop binding/=binding)

function(layer_of path out)
  file(RELATIVE_PATH rel "${native}" "${path}")
  foreach(pair ${layer_folders})
    string(REPLACE "=" ";" parts "${pair}")
    list(GET parts 0 folder)
    list(GET parts 1 layer)
    string(FIND "${rel}" "${folder}" at)
    if(at EQUAL 0)
      set(${out} ${layer} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} outside PARENT_SCOPE)
endfunction()

set(allowed_common common)
set(allowed_device common device device-cuda)
set(allowed_device-cuda common device device-cuda)
set(allowed_state common state)
set(allowed_policy common device device-cuda state policy)
set(allowed_host common device host)
set(allowed_compute common device state policy host compute)
set(allowed_runtime common device state policy host compute runtime)
set(allowed_interop common device state policy host compute runtime interop public-header)
set(allowed_wasm common device state policy wasm)
set(allowed_binding common device state policy host compute runtime interop binding public-header)

file(GLOB_RECURSE files "${native}/*.h" "${native}/*.cpp")
set(bad "")
foreach(file ${files})
  layer_of("${file}" from)
  get_filename_component(dir "${file}" DIRECTORY)
  file(STRINGS "${file}" lines REGEX "^#include \"")
  foreach(line ${lines})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
    get_filename_component(target "${inc}" ABSOLUTE BASE_DIR "${dir}")
    if(NOT EXISTS "${target}")
      list(APPEND bad "${file}: includes ${inc}, which is not a file next to it (write includes relative to the file)")
      continue()
    endif()
    layer_of("${target}" to)
    if(NOT to IN_LIST allowed_${from})
      file(RELATIVE_PATH rel "${native}" "${file}")
      list(APPEND bad "native/${rel} (${from}) includes ${inc} (${to}): a layer may include only itself and the layers below it")
    endif()
  endforeach()
endforeach()
list(LENGTH files count)
if(bad)
  string(REPLACE ";" "\n" text "${bad}")
  message(FATAL_ERROR "${text}")
endif()
message(STATUS "layers: ${count} files under native/, every include goes to the same layer or one below")
