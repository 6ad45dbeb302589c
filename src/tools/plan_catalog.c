/*
 * plan_catalog.c — the built-in catalogues of `edgellm plan`: devices with memory, bandwidth
 * and cores, and published quality costs of each precision (the model shapes are the one
 * catalogue of model_catalog.c). Every figure names its source in a comment; "derived" marks arithmetic
 * done here from sourced inputs, "estimate" marks a judgement that a user's device file or
 * `--device host` should replace.
 *
 * RAM sizes: phones and boards are sold in binary gigabytes ("8 GB" = 8 GiB of DRAM).
 */
#include "plan.h"
#include <math.h>

#define GIB(x) ((uint64_t)((x) * 1073741824.0))
#define GB(x)  ((uint64_t)((x) * 1e9))

/* name, description, source, ram, usable, bw GB/s, bw measured?, big, little, GFLOP/s per
 * big / little core, NPU, decode efficiency (0: default), kernel ISA */
#define D(NAME, DESC, SRC, RAM, USABLE, BW, BWM, NB, NL, GB_, GL, NPU, EFF, ISA) \
    { .name = NAME, .description = DESC, .source = SRC, .ram_bytes = RAM, .usable_bytes = USABLE, \
      .bw_gbps = BW, .bw_measured = BWM, .n_big_cores = NB, .n_little_cores = NL, .gflops_big = GB_, \
      .gflops_little = GL, .has_npu = NPU, .decode_efficiency = EFF, .isa = ISA }

/*
 * Usable memory on phones: about half the RAM. A Galaxy S23 with 8 GB had ~4 GB available
 * and crashed loading Llama-2-7B (pytorch/executorch#3599); an iPhone 13 Pro (6 GB) gives
 * an app 3.12 GB, 4.20 GB with the increased-memory-limit entitlement
 * (a-ghorbani/pocketpal-ai#651). Android's lmkd kills apps when the low watermark is
 * breached (pytorch/executorch#5582), so the safety margin comes on top of this.
 *
 * GFLOP/s per core: Q4_0 prefill multiply-adds (x2) per second of one core with int8
 * dot-product kernels of the class edgellm has (x86 AVX2/AVX-512 VNNI; ARM NEON dotprod,
 * no i8mm), from published prompt-processing speeds (FLOPs per token = 2 x matrix weights):
 *   Cortex-A76 @2.4 GHz (Pi 5): Llama 2 7B Q4_0 prompt 8.10 tok/s at 4 threads
 *     (ggml-org/llama.cpp#6928) = 2 x 6.5e9 x 8.10 / 4 = 27 per core (derived).
 *   Cortex-A72 @1.8 GHz (Pi 4, no dotprod): TinyLlama q8_0 prompt 10 tok/s
 *     (justine.lol/matmul) = 2 x 1.03e9 x 10 / 4 = 5.2 per core (derived).
 *   Per 128-bit NEON pipe and GHz: Snapdragon 8cx Gen 3 (4x Cortex-X1C @3.0 GHz with 4
 *     pipes, 4x A78C @2.44 GHz with 2; Radxa Dragon Q8B) prefills TinyLlama Q4_K_M at 194.5
 *     tok/s with 8 threads (llama-bench pp512, geerlingguy/ai-benchmarks#54) = 402 GFLOP/s
 *     over 4 x 4 x 3.0 + 4 x 2 x 2.44 = 67.5 pipe-GHz = 6.0 GFLOP/s per pipe-GHz (derived);
 *     the cores below are scaled by their pipes and clock from this (derived).
 *   i8mm: ExecuTorch (KleidiAI i8mm kernels) prefills Llama 3.2 1B at 260.5 tok/s on a
 *     OnePlus 12 (pytorch/executorch examples/models/llama/README.md) = 646 GFLOP/s, ~108
 *     per big core; SMMLA does 32 int8 multiply-adds per instruction where SDOT does 16, so
 *     edgellm's dotprod kernels reach about half (derived).
 *   x86: edgellm's own Q4_0 kernel measures ~330 per core on Zen 5 with AVX-512 VNNI
 *     (plan --device host); a laptop core with 256-bit AVX2/AVX-VNNI does half the
 *     multiply-adds per instruction at a lower clock: 130 (derived).
 * Decode efficiency (fraction of a PEAK bandwidth figure decode reaches; a measured read
 * is used at 0.99, see plan.h): Apple M1 >= 53.3 of 68.2 GB/s = 0.78 (ggml-org/llama.cpp#1642);
 * i9-13900K with DDR5-6400 ~0.68 (ggml-org/llama.cpp#34, 7B Q4_0 at 8 threads); phones
 * 0.57-0.74 (ExecuTorch, OnePlus 12): the default 0.65.
 */
const edgellm_plan_device edgellm_plan_catalog_devices[] = {
    /* Snapdragon 8 Gen 3: LPDDR5X-4800 MHz, 64-bit, 76.8 GB/s (droidholic.com spec;
     * runlocalai.co/hardware/snapdragon-8-gen-3); CPU 1x Cortex-X4 @3.3 + 5x A720 @3.0-3.15
     * + 2x A520 (Qualcomm product brief); Hexagon NPU. 12 GB as in the OnePlus 12 / Galaxy
     * S24 Ultra. GFLOP/s: X4 (4 pipes) 79 and A720 (2 pipes) 36 by the pipe-GHz figure,
     * mean 43; half the ExecuTorch i8mm figure 54; taken 45 (derived). A520: 5 (estimate). */
    D("phone-high", "flagship phone: Snapdragon 8 Gen 3, 12 GB LPDDR5X (OnePlus 12 class)",
      "bandwidth: droidholic.com / runlocalai.co (76.8 GB/s peak); GFLOP/s: geerlingguy/ai-benchmarks#54, executorch llama README (derived); usable ~50% of RAM: pytorch/executorch#3599",
      GIB(12), GIB(6), 76.8, 0, 6, 2, 45.0, 5.0, 1, 0.0, "arm"),
    /* Snapdragon 7 Gen 3 (SM7550): 1x A715 @2.63 + 3x A715 @2.4 + 4x A510 @1.8 GHz;
     * memory 2x 16-bit LPDDR5 @3200 MHz = 25.6 GB/s (AnandTech, "Qualcomm Adds Snapdragon
     * 7s Gen 3", Ryan Smith, 2024-08-20, SoC table); Hexagon NPU. A715: 2 pipes x 2.5 GHz
     * x 6.0 = 30 (derived); A510: 5 (estimate). */
    D("phone-mid", "mid-range phone: Snapdragon 7 Gen 3, 8 GB LPDDR5",
      "AnandTech 2024-08-20 Snapdragon 7-class table (25.6 GB/s peak, 1+3 A715 + 4 A510); GFLOP/s from geerlingguy/ai-benchmarks#54 (derived); usable ~50% of RAM: pytorch/executorch#3599",
      GIB(8), GIB(4), 25.6, 0, 4, 4, 30.0, 5.0, 1, 0.0, "arm"),
    /* Budget: 2 big (A76/A78 @2.2 GHz) + 6 A55 cores and 4 GB of LPDDR4X on a 32-bit
     * interface: 2x 16-bit LPDDR4X @2133 MHz = 17.0 GB/s (the same AnandTech table's LPDDR4X
     * figure for this controller; budget SoCs such as Helio G99 / Snapdragon 4 Gen 2 use the
     * same interface — estimate). Usable 40 %: the system's share does not shrink with RAM
     * (estimate). GFLOP/s: the Pi 5's A76 figure at 2.2 GHz, 25 (derived). NPU not assumed. */
    D("phone-low", "budget phone: 2 big + 6 little cores, 4 GB LPDDR4X",
      "bandwidth: AnandTech 2024-08-20 (2x16-bit LPDDR4X-4266 = 17.0 GB/s); GFLOP/s: ggml-org/llama.cpp#6928 (A76, derived); usable 40% of RAM (estimate)",
      GIB(4), GIB(1.6), 17.0, 0, 2, 6, 25.0, 5.0, 0, 0.0, "arm"),
    /* Raspberry Pi 5 8 GB: 32-bit LPDDR4X-4267 = 17.1 GB/s peak (derived, circuitdigest.com);
     * measured read-only 11.6 GB/s at 4 threads (ggml-org/llama.cpp#26484), which we use
     * (llama.cpp decode reaches 84-91 % of it). 4x Cortex-A76 @2.4 GHz. Usable: headless
     * Raspberry Pi OS leaves ~90 % (estimate). */
    D("pi5-8gb", "Raspberry Pi 5, 8 GB LPDDR4X, 4x Cortex-A76 @2.4 GHz",
      "ggml-org/llama.cpp#26484 (11.6 GB/s measured 4-thread read); circuitdigest.com (17.1 GB/s peak); ggml-org/llama.cpp#6928 (27 GFLOP/s per core, derived); usable 90% (estimate)",
      GIB(8), GIB(7.2), 11.6, 1, 4, 0, 27.0, 0.0, 0, 0.0, "arm"),
    /* Raspberry Pi 4 4 GB: 4x Cortex-A72 @1.8 GHz. Read bandwidth derived from a decode
     * measurement: TinyLlama q8_0 generates 3 tok/s (justine.lol/matmul) reading 1.17 GB per
     * token = 3.5 GB/s achieved, / 0.85 = 4.1 GB/s streaming read (derived; tinymembench copy
     * 2.8 GB/s, geerlingguy/sbc-reviews#110, counts a write too). */
    D("pi4-4gb", "Raspberry Pi 4, 4 GB LPDDR4, 4x Cortex-A72 @1.8 GHz",
      "justine.lol/matmul (TinyLlama q8_0 3 tok/s -> 4.1 GB/s read; prompt 10 tok/s -> 5.2 GFLOP/s per core, derived); geerlingguy/sbc-reviews#110; usable 88% (estimate)",
      GIB(4), GIB(3.5), 4.1, 1, 4, 0, 5.2, 0.0, 0, 0.0, "arm"),
    /* Jetson Orin Nano 8 GB: 128-bit LPDDR5, 68 GB/s; 6x Cortex-A78AE @1.5 GHz; no DLA (the
     * Orin NX has one) (NVIDIA Jetson Orin Nano series datasheet / developer-kit spec). The
     * GPU shares the RAM; edgellm runs on the CPU. GFLOP/s: 2 pipes x 1.5 GHz x 6.0 = 18
     * (derived). Usable: JetPack with desktop leaves ~6 GB (estimate). */
    D("orin-nano-8gb", "NVIDIA Jetson Orin Nano 8 GB (CPU), 6x Cortex-A78AE @1.5 GHz",
      "NVIDIA Jetson Orin Nano datasheet (68 GB/s peak, 128-bit LPDDR5); GFLOP/s from geerlingguy/ai-benchmarks#54 (derived); usable 6 GiB (estimate)",
      GIB(8), GIB(6), 68.0, 0, 6, 0, 18.0, 0.0, 0, 0.0, "arm"),
    /* 16 GB x86 laptop, 8 cores, dual-channel DDR5-5600 = 89.6 GB/s (derived:
     * 2 x 8 B x 5600 MT/s); decode reaches 0.68 of a DDR5 peak (ggml-org/llama.cpp#34).
     * Usable 60 %: desktop OS, browser and IDE stay resident (estimate). */
    D("laptop-16gb", "16 GB x86 laptop, 8 cores, dual-channel DDR5-5600",
      "derived: 2 x 8 B x 5600 MT/s = 89.6 GB/s peak (DDR5-5600 dual channel); efficiency 0.68: ggml-org/llama.cpp#34; GFLOP/s: edgellm's AVX-512 VNNI 330/core halved for 256-bit (derived); usable 60% (estimate)",
      GIB(16), GIB(9.6), 89.6, 0, 8, 0, 130.0, 0.0, 0, 0.68, "x86"),
    /* iPhone 13 Pro: 6 GB; an app gets 3.12 GB (4.20 GB with the increased-memory-limit
     * entitlement) (a-ghorbani/pocketpal-ai#651). A15: 2 performance (4 pipes, 3.2 GHz: 76 by
     * the pipe-GHz figure, derived) + 4 efficiency cores (10, estimate), Neural Engine;
     * LPDDR4X-4266 on 64 bits = 34.1 GB/s (derived; estimate of the memory interface). */
    D("iphone-13-pro", "iPhone 13 Pro: A15 (2 big + 4 little), 6 GB",
      "a-ghorbani/pocketpal-ai#651 (3.12 GB usable); bandwidth 34.1 GB/s peak (LPDDR4X-4266 x 64-bit, estimate); GFLOP/s derived from geerlingguy/ai-benchmarks#54",
      GIB(6), GB(3.12), 34.1, 0, 2, 4, 76.0, 10.0, 1, 0.0, "arm"),
    /* Apple M1 8 GB: 68.2 GB/s unified memory, llama.cpp CPU decode reaches >= 53.3 GB/s
     * (ggml-org/llama.cpp#1642): efficiency 0.78; 4 performance (4 pipes, 3.2 GHz: 76,
     * derived) + 4 efficiency cores (10, estimate); Neural Engine. Usable ~5.5 GB with macOS
     * and a browser open (estimate). */
    D("mac-m1-8gb", "Apple M1, 8 GB unified memory, 4 big + 4 little",
      "ggml-org/llama.cpp#1642 (68.2 GB/s peak, 53.3 GB/s reached by llama.cpp: efficiency 0.78); GFLOP/s derived from geerlingguy/ai-benchmarks#54; usable 5.5 GiB (estimate)",
      GIB(8), GIB(5.5), 68.2, 0, 4, 4, 76.0, 10.0, 1, 0.78, "arm"),
};
const int edgellm_plan_catalog_n_devices = (int)(sizeof edgellm_plan_catalog_devices / sizeof edgellm_plan_catalog_devices[0]);

/*
 * Published quality cost. llama.cpp tools/perplexity/README.md (copy crusaderky/llama.cpp,
 * revision f364eb6f): LLaMA-3-8B, Wikitext-2, against FP16 logits whose
 * own PPL is 6.2317 (6.2332 - 0.0015). ΔPPL % = ΔPPL / 6.2317 (derived). Top-1 ("same top
 * p") where the README gives it. F16 is the reference; its row is the BF16->FP16 cast of
 * the same README (KLD 0.000025, top-1 99.74 %). Llama 3 is more sensitive to quantization
 * than Llama 2, small models more than large ones (ExecuTorch README): treat these as the
 * order of magnitude, and run `edgellm eval` for the model at hand.
 */
#define L3_SRC "published: Llama-3-8B, ggml-org/llama.cpp tools/perplexity/README.md"
const edgellm_plan_published edgellm_plan_published_quality[] = {
    {"F16",    NAN,     0.000025, 99.74, "published: Llama-3-8B BF16->FP16, llama.cpp perplexity README"},
    {"BF16",   0.0,     0.0,      100.0, "reference precision of the published models"},
    {"Q8_0",   0.0433,  0.00136,  97.67, L3_SRC},
    {"Q6_K",   0.3482,  0.00545,  96.03, L3_SRC},
    {"Q5_K_M", 0.9147,  0.01076,  NAN,   L3_SRC},
    {"Q5_0",   2.1118,  0.02224,  NAN,   L3_SRC},
    {"Q4_K_M", 2.8163,  0.03127,  91.90, L3_SRC},
    {"Q4_K_S", 4.3150,  0.04314,  NAN,   L3_SRC},
    {"Q4_1",   7.2388,  0.07168,  NAN,   L3_SRC},
    {"Q4_0",   7.5180,  0.07194,  NAN,   L3_SRC},
    {"Q3_K_M", 10.5413, 0.10191,  NAN,   L3_SRC},
    {"Q2_K",   56.4838, 0.44513,  71.14, L3_SRC},
    /* Group-wise INT4 (ExecuTorch README, Llama 3 8B, 8da4w = 4-bit groupwise weights AND
     * 8-bit dynamic activations, LM-Eval WikiText *word* perplexity: FP32 7.9, g128 9.4,
     * g256 9.7). Not comparable with the llama.cpp token-PPL rows above. */
    {"I4_G128_SYM", 18.99, NAN, NAN, "published: Llama-3-8B 8da4w g128, ExecuTorch README (word PPL, incl. 8-bit activations; not comparable)"},
    {"I4_G256_SYM", 22.78, NAN, NAN, "published: Llama-3-8B 8da4w g256, ExecuTorch README (word PPL, incl. 8-bit activations; not comparable)"},
};
const int edgellm_plan_published_n = (int)(sizeof edgellm_plan_published_quality / sizeof edgellm_plan_published_quality[0]);

/* The candidate list: F16, Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0 and edgellm's i4 g128. */
const char *const edgellm_plan_default_types[] = {"F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "I4_G128_SYM"};
const int edgellm_plan_default_n_types = (int)(sizeof edgellm_plan_default_types / sizeof edgellm_plan_default_types[0]);
