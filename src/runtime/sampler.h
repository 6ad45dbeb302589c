/*
 * sampler.h — what speculative decoding needs of a sampler beyond edgellm_sampler_sample
 * (include/edgellm.h): the distribution it draws from, and draws from its RNG.
 */
#ifndef EDGELLM_RUNTIME_SAMPLER_H
#define EDGELLM_RUNTIME_SAMPLER_H

#include "edgellm.h"

/* probs[n_vocab] = the distribution edgellm_sampler_sample would draw from for logits
 * (penalties from the history, top-k, temperature, top-p, min-p, renormalised; zero for
 * filtered tokens); greedy: 1 at the token it would choose. Uses no random numbers.
 * EDGELLM_ERR_NUMERIC on NaN/inf logits. */
edgellm_status edgellm_sampler_probs(edgellm_sampler *s, const float *logits, float *probs, edgellm_error *err);
/* A draw in [0, 1) from the sampler's RNG (the one edgellm_sampler_sample uses). */
double edgellm_sampler_uniform(edgellm_sampler *s);
/* 1 when the sampler is greedy (temperature <= 0). */
int edgellm_sampler_greedy(const edgellm_sampler *s);

#endif
