# The layers of halftape, bottom to top, and what each may include and link. Run as a build step
# (cmake -P, target check_layers): an #include that runs back up a layer fails the build, naming
# the file, the line and the two layers; so does a target linking one above it (LINK_GRAPH).
#
#   ground                 dtypes, errors, host/device macros
#   simt                   the SIMT emulator                        on ground
#   kernels                CUDA kernels and their CPU references     on ground (simt: their executor)
#   engine                 tensors, backends, tape and ops, scaler, optimizers, checkpoints
#   comm, models, data     peers on engine
#   train                  the trainer                               on comm, models, data
#   bench                  benchmarks                                on train
#   cli                    the halftape binary                       on everything
set(allowed_ground ground)
set(allowed_simt ground simt)
set(allowed_kernels ground simt kernels)
set(allowed_engine ground simt kernels engine)
set(allowed_comm ground kernels engine comm)
set(allowed_models ground kernels engine models)
set(allowed_data ground kernels engine data)
set(allowed_train ground kernels engine comm models data train)
set(allowed_bench ground kernels engine comm models data train bench)
set(allowed_cli ground kernels engine comm models data train bench cli)
set(layers ground simt kernels engine comm models data train bench cli)

set(problems "")
foreach(layer ${layers})
  file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/${layer}/*.h ${ROOT}/${layer}/*.cpp ${ROOT}/${layer}/*.cu ${ROOT}/${layer}/*.cuh)
  foreach(file ${files})
    # Any spelling of an include of another layer: indented, "# include", <...> as well as "...",
    # and paths that climb out of the file's folder first ("../kernels/x.h").
    set(include_re "^[ \t]*#[ \t]*include[ \t]*[<\"](\\.\\./)*([a-z_]+)/")
    file(STRINGS ${ROOT}/${file} includes REGEX "${include_re}")
    foreach(line ${includes})
      string(REGEX MATCH "${include_re}" matched "${line}")
      set(target ${CMAKE_MATCH_2})
      list(FIND layers ${target} is_layer)
      list(FIND allowed_${layer} ${target} is_allowed)
      if(is_layer GREATER_EQUAL 0 AND is_allowed LESS 0)
        list(JOIN allowed_${layer} ", " allowed)
        string(APPEND problems "  ${file}: ${line} - ${layer}/ may include only ${allowed}\n")
      endif()
    endforeach()
  endforeach()
endforeach()
# The link graph (LINK_GRAPH: lines "TARGET: LIBRARY;LIBRARY...", written by CMakeLists.txt at
# configure time): a target may link only targets of the layers its files may include - the
# kernels' compiled objects (ht_kernels_*) as much as the headers.
set(layer_of_ht_ground ground)
set(layer_of_ht_simt_runtime simt)
foreach(t ht_kernels ht_kernels_simt ht_kernels_simt_counted ht_kernels_cuda ht_gemm_sm90a)
  set(layer_of_${t} kernels)
endforeach()
foreach(t ht_engine_core ht_engine ht_gpu_simt ht_gpu_simt_counted ht_gpu_cuda)
  set(layer_of_${t} engine)
endforeach()
foreach(l comm models data train bench)
  set(layer_of_ht_${l} ${l})
endforeach()
set(layer_of_halftape cli)
if(DEFINED LINK_GRAPH AND EXISTS "${LINK_GRAPH}")
  file(STRINGS "${LINK_GRAPH}" edges)
  foreach(edge ${edges})
    string(REGEX MATCH "^([A-Za-z0-9_]+): (.*)$" matched "${edge}")
    set(target ${CMAKE_MATCH_1})
    string(REPLACE "," ";" linked "${CMAKE_MATCH_2}")
    if(NOT DEFINED layer_of_${target})
      continue()
    endif()
    set(layer ${layer_of_${target}})
    foreach(library ${linked})
      if(DEFINED layer_of_${library})
        list(FIND allowed_${layer} ${layer_of_${library}} is_allowed)
        if(is_allowed LESS 0)
          list(JOIN allowed_${layer} ", " allowed)
          string(APPEND problems "  link: ${target} (${layer}/) links ${library} (${layer_of_${library}}/) - ${layer}/ may link only ${allowed}\n")
        endif()
      endif()
    endforeach()
  endforeach()
endif()
if(problems)
  message(FATAL_ERROR "includes or links that run back up the layers (docs/architecture.md):\n${problems}")
endif()
