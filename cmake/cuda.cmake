# The two executors of the GPU code, each as the kernels (kernels/*.cu, a kernels/ target) and the
# GPU backend over them (engine/gpu/*.cpp, an engine/ target):
#   ht_kernels_cuda, ht_gpu_cuda - nvcc for sm_80 and sm_90, the CUDA runtime (HALFTAPE_HAVE_CUDA);
#   ht_kernels_simt, ht_gpu_simt - the host compiler against the SIMT emulator in simt/
#     (HALFTAPE_HAVE_SIMT), and ht_kernels_simt_counted, ht_gpu_simt_counted with every access
#     counted.
# The same files build both; each lands in its own inline namespace (ht::gpu::cuda_impl /
# ht::gpu::simt_impl), so both link into one binary.

# Every kernels/*.cu: a new kernel is picked up without an edit here. Under nvcc the Hopper GEMM
# is its own target (below); the emulator runs it with the rest.
file(GLOB HT_KERNEL_SOURCES CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/kernels/*.cu)
set(HT_NVCC_KERNEL_SOURCES ${HT_KERNEL_SOURCES})
list(REMOVE_ITEM HT_NVCC_KERNEL_SOURCES kernels/gemm_wgmma.cu)
set(HT_GPU_HOST_SOURCES engine/gpu/gpu_backend.cpp engine/gpu/wgmma_self_check.cpp)

set(HALFTAPE_HAVE_CUDA OFF)
set(HALFTAPE_HAVE_SIMT OFF)
set(HALFTAPE_HAVE_SIMT_COUNTERS OFF)

find_path(HT_CUDA_INCLUDE_DIR cuda_fp16.h HINTS /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
if(HALFTAPE_SIMT AND HT_CUDA_INCLUDE_DIR)
  set(HALFTAPE_HAVE_SIMT ON)
endif()

if(HALFTAPE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # CMake 3.25 does not know nvcc's C++20 flag yet; teach it.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(HALFTAPE_HAVE_CUDA ON)
  endif()
endif()
message(STATUS "halftape: CUDA backend ${HALFTAPE_HAVE_CUDA} (${CMAKE_CUDA_ARCHITECTURES}), SIMT emulator ${HALFTAPE_HAVE_SIMT}")

if(HALFTAPE_HAVE_SIMT)
  halftape_layer(ht_simt_runtime SOURCES simt/scheduler.cpp simt/runtime.cpp simt/tensor_core.cpp simt/hopper.cpp simt/hopper_layouts.cpp
                 simt/counters.cpp
                 DEPENDS ht_ground Boost::context Threads::Threads)
  target_include_directories(ht_simt_runtime PUBLIC ${HT_CUDA_INCLUDE_DIR})
  # The hooks of simt/foreign_hooks.h, exported by every executable the emulator is linked into.
  target_link_options(ht_simt_runtime INTERFACE "LINKER:--export-dynamic-symbol=ht_emu_*")
  if(HALFTAPE_RACECHECK)  # the scheduler's bookkeeping and stack switches are not the kernels' accesses
    target_compile_options(ht_simt_runtime PRIVATE -fno-sanitize=thread)
  endif()

  # The kernels, compiled as C++ through one-line wrappers (a source file has one language):
  # for each .cu (relative to the source root), ${CMAKE_BINARY_DIR}/FOLDER/NAME.cpp, listed in OUT.
  function(halftape_cpp_wrappers out folder)
    set(wrappers)
    foreach(cu ${ARGN})
      get_filename_component(name ${cu} NAME_WE)
      set(wrapper ${CMAKE_BINARY_DIR}/${folder}/${name}.cpp)
      file(GENERATE OUTPUT ${wrapper} CONTENT "// Generated: ${cu} for the SIMT emulator (${folder}).\n#include \"${cu}\"\n")
      list(APPEND wrappers ${wrapper})
    endforeach()
    set(${out} ${wrappers} PARENT_SCOPE)
  endfunction()
  # The kernels (a kernels/ target: they link only down, to the references' layer and the
  # emulator) and the GPU backend over them (an engine/ target).
  halftape_cpp_wrappers(simt_sources simt_kernels ${HT_KERNEL_SOURCES})
  add_library(ht_kernels_simt STATIC ${simt_sources})
  target_compile_definitions(ht_kernels_simt PRIVATE HT_SIMT=1)
  target_link_libraries(ht_kernels_simt PUBLIC ht_kernels ht_simt_runtime)
  target_compile_options(ht_kernels_simt PRIVATE ${HT_WARNINGS})
  add_library(ht_gpu_simt STATIC ${HT_GPU_HOST_SOURCES})
  target_compile_definitions(ht_gpu_simt PRIVATE HT_SIMT=1)
  target_link_libraries(ht_gpu_simt PUBLIC ht_engine_core ht_kernels_simt)
  target_compile_options(ht_gpu_simt PRIVATE ${HT_WARNINGS})

  # The counting executor (simt/counters.h): the same kernels once more, every access hooked by
  # GCC's ThreadSanitizer pass, whose calls simt/counting_hooks.cpp answers. Not in sanitizer
  # builds (their own instrumentation and runtimes would meet it).
  if(NOT HALFTAPE_SANITIZE AND NOT HALFTAPE_RACECHECK)
    set(HALFTAPE_HAVE_SIMT_COUNTERS ON)
    set(HT_COUNTING_FLAGS -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -fno-tree-sra -Wno-tsan)
    halftape_cpp_wrappers(counted_sources simt_counted_kernels ${HT_KERNEL_SOURCES})
    set_source_files_properties(${counted_sources} PROPERTIES COMPILE_OPTIONS "${HT_COUNTING_FLAGS}")
    add_library(ht_kernels_simt_counted STATIC ${counted_sources} simt/counting_hooks.cpp)
    target_compile_definitions(ht_kernels_simt_counted PRIVATE HT_SIMT=1 HT_SIMT_COUNTED=1)
    target_link_libraries(ht_kernels_simt_counted PUBLIC ht_kernels ht_simt_runtime)
    target_compile_options(ht_kernels_simt_counted PRIVATE ${HT_WARNINGS})
    add_library(ht_gpu_simt_counted STATIC ${HT_GPU_HOST_SOURCES})
    target_compile_definitions(ht_gpu_simt_counted PRIVATE HT_SIMT=1 HT_SIMT_COUNTED=1)
    target_link_libraries(ht_gpu_simt_counted PUBLIC ht_engine_core ht_kernels_simt_counted)
    target_compile_options(ht_gpu_simt_counted PRIVATE ${HT_WARNINGS})
  endif()
endif()

# NCCL. A CUDA build links the real library. A build with the emulator builds the NCCL stand-in of
# the tests (tests/nccl_standin: a libnccl.so.2 that moves the emulator's memory over MPI, against
# the real nccl.h), which a build without CUDA links in NCCL's place and a CUDA build never links
# (its tests put it first with LD_LIBRARY_PATH).
find_path(HT_NCCL_INCLUDE_DIR nccl.h HINTS ${HT_CUDA_INCLUDE_DIR} /usr/local/cuda/include)
if(HALFTAPE_HAVE_SIMT AND HT_NCCL_INCLUDE_DIR AND HALFTAPE_TESTS)
  add_library(nccl_standin SHARED tests/nccl_standin/nccl_standin.cpp)
  set_target_properties(nccl_standin PROPERTIES OUTPUT_NAME nccl VERSION 2 SOVERSION 2
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/nccl_standin)
  target_include_directories(nccl_standin PRIVATE ${CMAKE_SOURCE_DIR} ${HT_NCCL_INCLUDE_DIR} ${HT_CUDA_INCLUDE_DIR})
  target_link_libraries(nccl_standin PRIVATE MPI::MPI_CXX)
  target_compile_options(nccl_standin PRIVATE ${HT_WARNINGS})
  set(HT_NCCL_STANDIN_DIR ${CMAKE_BINARY_DIR}/nccl_standin)
endif()
if(HALFTAPE_HAVE_CUDA)
  find_library(HT_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(NOT HT_NCCL_LIBRARY OR NOT HT_NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "halftape: the CUDA build needs NCCL (nccl.h and libnccl) next to the toolkit")
  endif()
  add_library(ht_kernels_cuda STATIC ${HT_NVCC_KERNEL_SOURCES})
  target_include_directories(ht_kernels_cuda PUBLIC ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(ht_kernels_cuda PUBLIC ht_kernels CUDA::cudart)
  target_compile_options(ht_kernels_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Wall,-Werror --expt-relaxed-constexpr -lineinfo>)
  add_library(ht_gpu_cuda STATIC ${HT_GPU_HOST_SOURCES} engine/gpu/cublas_gemm.cpp)
  target_link_libraries(ht_gpu_cuda PUBLIC ht_engine_core ht_kernels_cuda CUDA::cudart CUDA::cublasLt)
  target_compile_options(ht_gpu_cuda PRIVATE ${HT_WARNINGS})
  # The Hopper GEMM uses sm_90a-only instructions (wgmma, setmaxnreg's family): its own target,
  # built for that architecture alone; the backend picks it at run time on sm_90.
  add_library(ht_gemm_sm90a STATIC kernels/gemm_wgmma.cu)
  set_target_properties(ht_gemm_sm90a PROPERTIES CUDA_ARCHITECTURES OFF)
  target_include_directories(ht_gemm_sm90a PRIVATE ${CMAKE_SOURCE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_options(ht_gemm_sm90a PRIVATE -gencode=arch=compute_90a,code=sm_90a --Werror=all-warnings
                         -Xcompiler=-Wall,-Werror --expt-relaxed-constexpr -lineinfo -Xptxas=-warn-spills,-warn-lmem-usage)
  target_link_libraries(ht_gemm_sm90a PUBLIC ht_kernels CUDA::cudart)
  target_link_libraries(ht_kernels_cuda PUBLIC ht_gemm_sm90a)
  # The GEMM kernels must keep their accumulators in registers: a spill or any local memory
  # is a build error (tests/kernel_resources.py holds every kernel to it in CI).
  set_source_files_properties(kernels/gemm_mma_f16.cu kernels/gemm_mma_bf16.cu TARGET_DIRECTORY ht_kernels_cuda
                              PROPERTIES COMPILE_OPTIONS "-Xptxas=-warn-spills,-warn-lmem-usage")
endif()

# The compiler's resource usage of every kernel (registers, stack, launch bounds, occupancy),
# read from the built libraries into kernel_resources.json for `halftape profile`
# (scripts/kernel_resources.py; CI holds it to tests/resource_floors.txt).
set(HT_KERNEL_RESOURCES "")
if(HALFTAPE_HAVE_CUDA)
  find_program(HT_CUOBJDUMP cuobjdump HINTS /usr/local/share/halftape/cuda-binutils-13.5.37/bin)  # scripts/setup.sh
endif()
if(HALFTAPE_HAVE_CUDA AND HT_CUOBJDUMP)
  set(HT_KERNEL_RESOURCES ${CMAKE_BINARY_DIR}/kernel_resources.json)
  add_custom_command(OUTPUT ${HT_KERNEL_RESOURCES}
    COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/scripts/kernel_resources.py ${HT_CUOBJDUMP} $<TARGET_FILE:ht_kernels_cuda>
            $<TARGET_FILE:ht_gemm_sm90a> --json ${HT_KERNEL_RESOURCES} > /dev/null
    DEPENDS ht_kernels_cuda ht_gemm_sm90a ${CMAKE_SOURCE_DIR}/scripts/kernel_resources.py ${CMAKE_SOURCE_DIR}/kernels/gemm.h
    COMMENT "Reading every kernel's resource usage (kernel_resources.json)")
  add_custom_target(ht_kernel_resources ALL DEPENDS ${HT_KERNEL_RESOURCES})
endif()

# The NCCL communicator (comm/): over the real NCCL in a CUDA build, over the stand-in in a build
# with the emulator only. It calls NCCL and the Backend interface, never the CUDA runtime: it needs
# nccl.h (and the CUDA headers nccl.h includes).
function(halftape_link_nccl target)
  if(HALFTAPE_HAVE_CUDA)
    set(nccl ${HT_NCCL_LIBRARY})
  elseif(TARGET nccl_standin)
    set(nccl nccl_standin)
  endif()
  if(nccl)
    target_sources(${target} PRIVATE comm/nccl_communicator.cpp)
    target_include_directories(${target} PUBLIC ${HT_NCCL_INCLUDE_DIR} ${HT_CUDA_INCLUDE_DIR})
    target_link_libraries(${target} PUBLIC ${nccl})
  endif()
  target_compile_definitions(${target} PRIVATE HALFTAPE_HAVE_NCCL=$<BOOL:${nccl}>)
endfunction()

function(halftape_link_gpu_backends target)
  target_compile_definitions(${target} PRIVATE
    HALFTAPE_HAVE_SIMT=$<BOOL:${HALFTAPE_HAVE_SIMT}> HALFTAPE_HAVE_CUDA=$<BOOL:${HALFTAPE_HAVE_CUDA}>
    HALFTAPE_HAVE_SIMT_COUNTERS=$<BOOL:${HALFTAPE_HAVE_SIMT_COUNTERS}>)
  if(HALFTAPE_HAVE_SIMT)
    target_link_libraries(${target} PUBLIC ht_gpu_simt)
  endif()
  if(HALFTAPE_HAVE_SIMT_COUNTERS)
    target_link_libraries(${target} PUBLIC ht_gpu_simt_counted)
  endif()
  if(HALFTAPE_HAVE_CUDA)
    target_link_libraries(${target} PUBLIC ht_gpu_cuda)
  endif()
endfunction()
