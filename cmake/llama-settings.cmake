# The llama.cpp and ggml build the addon and the Node-free tools (native/tools) share, so the tools
# measure what the service runs. Set ARBITRA_LLAMA_COMMON before including it where llama.cpp's
# `common` library is needed (llama-bench).
option(ARBITRA_CUDA "Build llama.cpp with the CUDA backend" OFF)
option(ARBITRA_NATIVE "Tune llama.cpp for this machine's CPU (binaries may not run elsewhere)" OFF)

# CPU variants (an x86-64 CPU build's default, scripts/setup.mjs): the CPU backend is built once per
# instruction set named below, each a module beside the addon, and the engine loads the best this
# processor runs when it starts (native/cpu_variant.cc). Modules need ggml and llama as shared libraries,
# found beside whatever loads them ($ORIGIN), so the folder can be copied into an image whole.
option(ARBITRA_CPU_VARIANTS "Build the CPU backend once per variant in ARBITRA_CPU_VARIANT_LIST, chosen at load" OFF)
# haswell is x86-64-v3 (AVX2, FMA, F16C, BMI2); zen4 adds AVX-512 with VBMI, VNNI and BF16 (Zen 4 and
# later, Sapphire Rapids and later). Any name of ggml's GGML_CPU_ALL_VARIANTS table works here.
set(ARBITRA_CPU_VARIANT_LIST "haswell;zen4" CACHE STRING "CPU variants a variants build carries")
if(ARBITRA_CPU_VARIANTS AND (ARBITRA_CUDA OR ARBITRA_NATIVE))
  message(FATAL_ERROR "ARBITRA_CPU_VARIANTS builds the CPU backend for several processors; it goes with neither ARBITRA_CUDA nor ARBITRA_NATIVE")
endif()
if(ARBITRA_CPU_VARIANTS)
  set(BUILD_SHARED_LIBS ON CACHE BOOL "" FORCE)
  set(GGML_BACKEND_DL ON CACHE BOOL "" FORCE)
  set(GGML_CPU_ALL_VARIANTS ON CACHE BOOL "" FORCE)
  set(GGML_CPU_VARIANTS "${ARBITRA_CPU_VARIANT_LIST}" CACHE STRING "" FORCE)
  # $ORIGIN alone, no build-tree path: the folder works wherever it is copied to. llama.cpp writes
  # its libraries to its own bin/; CMakeLists.txt moves them beside the addon.
  set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)
  set(CMAKE_INSTALL_RPATH "$ORIGIN")
else()
  set(BUILD_SHARED_LIBS OFF CACHE BOOL "" FORCE)
  set(GGML_BACKEND_DL OFF CACHE BOOL "" FORCE)
  set(GGML_CPU_ALL_VARIANTS OFF CACHE BOOL "" FORCE)
endif()
# A variants build's libraries and CPU modules, written to `folder`: call after add_subdirectory()
# of llama.cpp, with the folder of whatever loads them (native/cpu_variant.cc scans its own folder).
function(arbitra_cpu_modules_beside folder)
  foreach(lib llama ggml ggml-base ${GGML_AVAILABLE_BACKENDS})
    if(TARGET ${lib})
      set_target_properties(${lib} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${folder}")
    endif()
  endforeach()
  # GCC 12's AVX-512 headers initialise a variable from itself, which -Wuninitialized reported over
  # 800 times in the zen4 variant's llama.cpp sources: 14,000 lines of npm install's output. The
  # haswell variant compiles the same engine sources with these warnings on.
  if(TARGET ggml-cpu-zen4 AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(ggml-cpu-zen4 PRIVATE -Wno-uninitialized -Wno-maybe-uninitialized)
  endif()
endfunction()
set(LLAMA_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_TOOLS OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_SERVER OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_APP OFF CACHE BOOL "" FORCE)
if(ARBITRA_LLAMA_COMMON)
  set(LLAMA_BUILD_COMMON ON CACHE BOOL "" FORCE)
else()
  set(LLAMA_BUILD_COMMON OFF CACHE BOOL "" FORCE)
endif()
set(LLAMA_CURL OFF CACHE BOOL "" FORCE)
set(LLAMA_OPENSSL OFF CACHE BOOL "" FORCE)
set(GGML_OPENMP OFF CACHE BOOL "" FORCE)
set(GGML_CUDA ${ARBITRA_CUDA} CACHE BOOL "" FORCE)
if(ARBITRA_NATIVE)
  set(GGML_NATIVE ON CACHE BOOL "" FORCE)
elseif(ARBITRA_CPU_VARIANTS)
  set(GGML_NATIVE OFF CACHE BOOL "" FORCE)
else()
  # Portable default: the x86-64-v3 feature level (AVX2, FMA, F16C, BMI2), present on x86 servers of the last decade.
  set(GGML_NATIVE OFF CACHE BOOL "" FORCE)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    foreach(feature AVX AVX2 FMA F16C BMI2)
      set(GGML_${feature} ON CACHE BOOL "" FORCE)
    endforeach()
  endif()
endif()
if(ARBITRA_CUDA AND NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "native" CACHE STRING "" FORCE)
endif()
