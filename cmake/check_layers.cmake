# The layers of halftape, bottom to top, and what each may include. Run as a build step
# (cmake -P, target check_layers): an #include that runs back up a layer fails the build, naming
# the file, the line and the two layers.
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
if(problems)
  message(FATAL_ERROR "includes that run back up the layers (docs/architecture.md):\n${problems}")
endif()
