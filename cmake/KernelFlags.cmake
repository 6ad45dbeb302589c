# Per-ISA kernel files get their ISA flags; the dispatcher (src/kernels/dispatch.c,
# matmul.c) picks them at run time, so the rest of the library stays baseline x86-64 /
# AArch64. Used by the main build and by fuzz/CMakeLists.txt, so both compile alike.
#   src/kernels/x86/*_gfni_avx512.c  AVX-512 F/BW/VL/DQ + VNNI + GFNI
#   src/kernels/x86/*_avx512.c       AVX-512 F/BW/VL/DQ + VNNI
#   src/kernels/x86/*.c              AVX2 + FMA + F16C
#   src/kernels/arm/*_dotprod.c      Armv8.2-A + dotprod
function(edgellm_kernel_flags)
  set(avx512 "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx2;-mfma;-mf16c")
  foreach(src ${ARGN})
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
      if(src MATCHES "/kernels/x86/.*_gfni_avx512\\.c$")
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${avx512};-mgfni")
      elseif(src MATCHES "/kernels/x86/.*_avx512\\.c$")
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${avx512}")
      elseif(src MATCHES "/kernels/x86/")
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
      endif()
    elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
      if(src MATCHES "/kernels/arm/.*_dotprod\\.c$")
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
      endif()
    endif()
  endforeach()
endfunction()
