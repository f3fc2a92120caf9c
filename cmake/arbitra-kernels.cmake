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
    # A static backend (one built in: CUDA, ARBITRA_NATIVE, ARBITRA_CPU_VARIANTS off) is an archive,
    # and a linker takes an archive's member only for a strong reference: repack.cpp's weak one
    # would leave the hook out, and llama.cpp's kernels in, silently. Whatever links it asks for it.
    get_target_property(_arbitra_backend_type ${backend} TYPE)
    if(_arbitra_backend_type STREQUAL "STATIC_LIBRARY")
      target_link_options(${backend} INTERFACE "LINKER:--undefined=arbitra_repack_traits")
    endif()
  endif()
endforeach()
