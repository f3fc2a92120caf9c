# Arbitra's own CPU kernels (native/ggml-cpu), compiled into every CPU backend llama.cpp's tree
# defined (the one built in, or one module per variant), each with that backend's instruction flags.
# repack.cpp asks them first through a weak hook (native/patches/ggml-cpu-int8-hook.patch).
# Include after add_subdirectory() of llama.cpp.
file(GLOB ARBITRA_CPU_KERNELS CONFIGURE_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/../native/ggml-cpu/*.cc")
set(_arbitra_cpu_backends ggml-cpu)
foreach(variant ${ARBITRA_CPU_VARIANT_LIST})
  list(APPEND _arbitra_cpu_backends ggml-cpu-${variant})
endforeach()
foreach(backend ${_arbitra_cpu_backends})
  if(TARGET ${backend})
    target_sources(${backend} PRIVATE ${ARBITRA_CPU_KERNELS})
  endif()
endforeach()
