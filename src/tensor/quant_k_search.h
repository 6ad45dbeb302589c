/*
 * quant_k_search.h — the scale searches behind the K-quant reference quantizers
 * (quant_k_search.c), shared with quant_k.c. Internal to src/tensor.
 */
#ifndef EDGELLM_QUANT_K_SEARCH_H
#define EDGELLM_QUANT_K_SEARCH_H

#include "quant.h"

/* Blocks whose largest |x| is below this are treated as all zero. */
#define EDGELLM_KQ_EPS 1e-15f

/* Symmetric codes for n values: L[i] in 0..2*nmax-1 meaning (L - nmax), scale returned,
 * x ≈ scale * (L - nmax). Weighted least squares with weights x^2, trying 19 trial
 * inverse scales around -nmax/max (max = the signed largest value). */
float edgellm_kq_search_sym(int n, int nmax, const float *x, int8_t *L);

/* Same model for Q3_K: start from the nearest codes, then improve one code at a time
 * (weights x^2) while the weighted error falls, at most 5 sweeps. L in -nmax..nmax-1
 * returned WITHOUT the offset. */
float edgellm_kq_search_q3(int n, int nmax, const float *x, int8_t *L);

/* Asymmetric codes: x ≈ scale * L - neg_min, L in 0..nmax, neg_min >= 0. Starts from the
 * min/max fit, then tries nstep+1 inverse scales (rmin + rdelta*k + nmax)/(max - min),
 * each refit by weighted least squares for (scale, min), keeping the one of least
 * weighted squared (abs_err: absolute) error. Laux: scratch of n bytes. */
float edgellm_kq_search_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min,
                            uint8_t *Laux, float rmin, float rdelta, int nstep, bool abs_err);

#endif
