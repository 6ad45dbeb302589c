/* test_fp16.c — half and bfloat16 conversion against values from the IEEE 754 tables. */
#include "common/common.h"
#include "test_util.h"

static void test_fp16_known_values(void)
{
    CHECK_EQ(edgellm_f32_to_f16(1.0f), 0x3c00);
    CHECK_EQ(edgellm_f32_to_f16(-2.0f), 0xc000);
    CHECK_EQ(edgellm_f32_to_f16(65504.0f), 0x7bff);      /* largest half */
    CHECK_EQ(edgellm_f32_to_f16(65520.0f), 0x7c00);      /* rounds to inf */
    CHECK_EQ(edgellm_f32_to_f16(5.9604645e-8f), 0x0001); /* smallest subnormal */
    CHECK_EQ(edgellm_f32_to_f16(1e-9f), 0x0000);
    CHECK(edgellm_f16_to_f32(0x3555) > 0.3332f && edgellm_f16_to_f32(0x3555) < 0.3334f);
    CHECK_EQ(edgellm_f32_to_bf16(1.0f), 0x3f80);
    CHECK(edgellm_bf16_to_f32(0x4049) > 3.14f && edgellm_bf16_to_f32(0x4049) < 3.15f);
}

static void test_fp16_roundtrip_all_halfs(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  /* NaN payloads */
        if (edgellm_f32_to_f16(edgellm_f16_to_f32((uint16_t)h)) != h) bad++;
    }
    CHECK_EQ(bad, 0);
}

int main(void)
{
    RUN(test_fp16_known_values);
    RUN(test_fp16_roundtrip_all_halfs);
    return test_summary();
}
