# The two GPU executors of kernels/*.cu and engine/gpu/*.cu:
#   ht_gpu_cuda - nvcc, for sm_80 and sm_90 (HALFTAPE_HAVE_CUDA);
#   ht_gpu_simt - the host compiler, against the SIMT emulator in simt/ (HALFTAPE_HAVE_SIMT).
# The same files build both; each lands in its own inline namespace (ht::gpu::cuda / ::simt).

set(HT_GPU_SOURCES)  # filled in as kernels land

set(HALFTAPE_HAVE_CUDA OFF)
set(HALFTAPE_HAVE_SIMT OFF)

find_path(HT_CUDA_INCLUDE_DIR cuda_fp16.h HINTS /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
if(HALFTAPE_SIMT AND HT_CUDA_INCLUDE_DIR)
  set(HALFTAPE_HAVE_SIMT OFF)  # TODO(simt): enabled once the emulator lands
endif()

if(HALFTAPE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(HALFTAPE_HAVE_CUDA OFF)  # TODO(cuda): enabled once the kernels land
  endif()
endif()
message(STATUS "halftape: CUDA backend ${HALFTAPE_HAVE_CUDA}, SIMT emulator ${HALFTAPE_HAVE_SIMT}")

function(halftape_link_gpu_backends target)
  target_compile_definitions(${target} PRIVATE
    HALFTAPE_HAVE_SIMT=$<BOOL:${HALFTAPE_HAVE_SIMT}> HALFTAPE_HAVE_CUDA=$<BOOL:${HALFTAPE_HAVE_CUDA}>)
  if(HALFTAPE_HAVE_SIMT)
    target_link_libraries(${target} PUBLIC ht_gpu_simt)
  endif()
  if(HALFTAPE_HAVE_CUDA)
    target_link_libraries(${target} PUBLIC ht_gpu_cuda)
  endif()
endfunction()
