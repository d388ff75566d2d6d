# A compiler cache for g++, clang and nvcc (scripts/setup.sh installs ccache). Keyed by paths
# relative to the source tree (base_dir) and not by the build folder (hash_dir off), so a fresh
# clone in another folder hits what any earlier build of the same sources compiled.
# Include it with HT_SOURCE_ROOT set to the repository root, before any target is defined.
option(HALFTAPE_CCACHE "Compile through ccache when it is installed" ON)
find_program(HT_CCACHE ccache)
if(HALFTAPE_CCACHE AND HT_CCACHE)
  set(HT_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${HT_SOURCE_ROOT} CCACHE_NOHASHDIR=1 ${HT_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${HT_LAUNCHER})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${HT_LAUNCHER})
endif()
