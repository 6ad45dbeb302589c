# Per-ISA kernel files get their ISA flags; the dispatcher (src/kernels/dispatch.c) picks
# them at run time, so the rest of the library stays baseline x86-64 / AArch64. Used by the
# main build and by fuzz/CMakeLists.txt, so both compile alike.
#
# Every .c under src/kernels/x86/ and src/kernels/arm/ is in exactly one list below, by
# name: a new kernel file goes into the list of the ISA it is written for (its name ends
# in that ISA: *_avx2.c, *_avx512.c, *_avx512_gfni.c, *_amx.c, *_neon.c, *_dotprod.c).
# edgellm_kernel_flags stops the configure step on a file of those folders that no list
# names. Files of one architecture compile to nothing on the other (their bodies are
# guarded by the target's predefined macros), so no list is dropped per architecture.
set(EDGELLM_KERNELS_DIR ${CMAKE_CURRENT_LIST_DIR}/../src/kernels)
get_filename_component(EDGELLM_KERNELS_DIR ${EDGELLM_KERNELS_DIR} ABSOLUTE)

# x86-64, AVX2 + FMA + F16C
set(EDGELLM_X86_AVX2_SOURCES
  x86/attend_avx2.c
  x86/dot_float_avx2.c
  x86/dot_group_avx2.c
  x86/dot_q2_K_q3_K_avx2.c
  x86/dot_q4_0_avx2.c
  x86/dot_q4_1_q5_0_q5_1_avx2.c
  x86/dot_q4_K_q5_K_avx2.c
  x86/dot_q6_K_avx2.c
  x86/dot_q8_0_avx2.c
  x86/gemm_q8_avx2.c
  x86/quant_q8_avx2.c)
set(EDGELLM_X86_AVX2_FLAGS -mavx2 -mfma -mf16c)

# x86-64, AVX-512 F/BW/VL/DQ + VNNI (and the AVX2 set)
set(EDGELLM_X86_AVX512_SOURCES
  x86/attend_avx512.c
  x86/dot_f16_avx512.c
  x86/dot_q4_0_q8_0_avx512.c
  x86/dot_q4_K_q6_K_avx512.c
  x86/dot_q5_K_avx512.c
  x86/gemm_f16_avx512.c
  x86/gemm_k_avx512.c
  x86/gemm_q8_avx512.c)
set(EDGELLM_X86_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx2 -mfma -mf16c)

# x86-64, the AVX-512 set + GFNI
set(EDGELLM_X86_AVX512_GFNI_SOURCES
  x86/gemm_k_avx512_gfni.c)
set(EDGELLM_X86_AVX512_GFNI_FLAGS ${EDGELLM_X86_AVX512_FLAGS} -mgfni)

# x86-64, the AVX-512 + GFNI set + AVX512_VBMI + AMX-TILE/AMX-INT8 (Sapphire Rapids and later)
set(EDGELLM_X86_AMX_SOURCES
  x86/gemm_k_amx.c)
set(EDGELLM_X86_AMX_FLAGS ${EDGELLM_X86_AVX512_GFNI_FLAGS} -mavx512vbmi -mamx-tile -mamx-int8)

# AArch64, Advanced SIMD (baseline: no flags)
set(EDGELLM_ARM_NEON_SOURCES
  arm/dot_float_neon.c
  arm/dot_q_neon.c
  arm/gemm_k_neon.c
  arm/quant_q8_neon.c)
set(EDGELLM_ARM_NEON_FLAGS "")

# AArch64, Armv8.2-A + dotprod
set(EDGELLM_ARM_DOTPROD_SOURCES
  arm/dot_q_dotprod.c
  arm/gemm_k_dotprod.c
  arm/gemm_q_dotprod.c)
set(EDGELLM_ARM_DOTPROD_FLAGS -march=armv8.2-a+dotprod)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(EDGELLM_KERNEL_ISAS X86_AVX2 X86_AVX512 X86_AVX512_GFNI X86_AMX)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(EDGELLM_KERNEL_ISAS ARM_NEON ARM_DOTPROD)
else()
  set(EDGELLM_KERNEL_ISAS "")
endif()

# edgellm_kernel_flags(SOURCES...): give each listed kernel file among SOURCES the flags of
# its list (this architecture's lists only); other sources are left alone. A source in
# src/kernels/x86/ or src/kernels/arm/ that no list names is an error.
function(edgellm_kernel_flags)
  set(listed "")
  foreach(isa X86_AVX2 X86_AVX512 X86_AVX512_GFNI X86_AMX ARM_NEON ARM_DOTPROD)
    set(${isa}_abs "")
    foreach(rel ${EDGELLM_${isa}_SOURCES})
      list(APPEND ${isa}_abs ${EDGELLM_KERNELS_DIR}/${rel})
    endforeach()
    list(APPEND listed ${${isa}_abs})
  endforeach()
  foreach(src ${ARGN})
    get_filename_component(abs ${src} ABSOLUTE)
    if(abs MATCHES "/src/kernels/(x86|arm)/[^/]*\\.c$" AND NOT abs IN_LIST listed)
      message(FATAL_ERROR "${src}: a kernel file in no list of cmake/KernelFlags.cmake")
    endif()
    foreach(isa ${EDGELLM_KERNEL_ISAS})
      if(abs IN_LIST ${isa}_abs AND EDGELLM_${isa}_FLAGS)
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${EDGELLM_${isa}_FLAGS}")
      endif()
    endforeach()
  endforeach()
endfunction()
