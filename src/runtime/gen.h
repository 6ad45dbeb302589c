/*
 * gen.h — the generation engine behind edgellm_generate, edgellm_generate_batch, the
 * asynchronous jobs and the server: streams (one generation in one sequence each) advanced
 * together by a scheduler, one forward pass per step.
 *
 * A stream goes through:
 *   begin     its prompt tokens are placed: with append 0 the sequence keeps its longest
 *             prefix equal to the prompt (cells at positions 0, 1, ...: the prompt cache) and
 *             the rest becomes `todo`; with append 1 the whole prompt is todo, after what the
 *             sequence holds. A prompt that does not fit n_ctx is refused here.
 *   prefill   its todo tokens go into the step's batch, up to the scheduler's budget per
 *             step (all of them for a single generation: one pass, as llama.cpp does);
 *   decode    once its last prompt token has logits: sample, stop (EOS, n_predict, the
 *             callback, n_ctx) or emit the piece and put the token into the next batch.
 * Every stream samples from its own sequence's logits with its own sampler, so the tokens
 * of a stream do not depend on what else runs: the same as alone, with the same seed.
 */
#ifndef EDGELLM_RUNTIME_GEN_H
#define EDGELLM_RUNTIME_GEN_H

#include "../model/model.h"

typedef enum { GEN_IDLE = 0, GEN_PREFILL, GEN_DECODE, GEN_DONE } edgellm_gen_state;

/* Called with each piece; index is the stream's caller-side id (the prompt's index). */
typedef int (*edgellm_gen_piece_fn)(void *user, int index, int32_t token, const char *piece, size_t len);

typedef struct {
    edgellm_gen_state state;
    int index;                      /* the caller's id for callbacks                     */
    int seq;
    edgellm_generate_params p;      /* sized in: defaults for what the caller's lacks     */
    edgellm_sampler *smp;
    int32_t *todo;                  /* prompt tokens still to run through the model      */
    int n_todo, todo_done;
    int32_t next;                   /* GEN_DECODE: the sampled token to run next         */
    bool strip_space;               /* drop the leading space of the first piece         */
    char pend[8];                   /* bytes of an unfinished UTF-8 character            */
    int n_pend;
    char *piece;                    /* piece buffer                                      */
    int piece_cap;
    double t_start, t_first;        /* ms: begin, first logits                           */
    edgellm_generate_stats st;
    edgellm_status rc;
    edgellm_error err;
} edgellm_gen;

/* Start a stream (g zeroed, or a stream that ended: what it owned is freed or reused) in
 * sequence p->seq of c: tokenize (prompt, or p->prompt_tokens when prompt
 * is NULL), place the prompt (prefix reuse or append), check that it fits, make the
 * sampler. On failure the stream is GEN_DONE with rc/err set (and that status returned). */
edgellm_status edgellm_gen_begin(edgellm_gen *g, edgellm_ctx *c, int index, const char *prompt,
                                 const edgellm_generate_params *p);
/* Free what the stream owns (NULL-safe); the stream can begin again. */
void edgellm_gen_end(edgellm_gen *g);

/* Stop a running stream between steps (a server's client went away, a timeout): it ends
 * GEN_DONE with stop EDGELLM_STOP_ABORT and rc EDGELLM_OK, no callback (held-back bytes are
 * dropped). What it put into its sequence stays there (prompt tokens of a cut prefill too:
 * a later prompt with that prefix reuses them). A stream not running is left as it is. */
void edgellm_gen_cancel(edgellm_ctx *c, edgellm_gen *g);

/* Run steps until no stream in gens[n] is running (GEN_IDLE streams are skipped).
 * prefill_budget: prompt tokens per step over all streams (<= 0: no limit). refill (may be
 * NULL) is called once for each stream that ends (GEN_DONE: its stats, rc and err are
 * final), to collect it and begin the next prompt in it (edgellm_gen_begin); it returns
 * false when there is none, and the stream becomes GEN_IDLE. Returns the first failing
 * stream's status (the others are stopped) or EDGELLM_OK. */
typedef bool (*edgellm_gen_refill_fn)(void *user, edgellm_gen *g);
edgellm_status edgellm_gen_run(edgellm_ctx *c, edgellm_gen *gens, int n, int prefill_budget, edgellm_gen_piece_fn cb,
                               edgellm_gen_refill_fn refill, void *user, edgellm_error *err);

/* One step of the scheduler (edgellm_gen_run's loop body; the server calls it): one
 * forward pass over the next tokens of every active stream, then sampling. Returns
 * EDGELLM_OK with *n_active set to the streams still running, or the failing status (the
 * pass's: abort, numeric, ...; those streams end with it). */
edgellm_status edgellm_gen_step(edgellm_ctx *c, edgellm_gen *gens, int n, int prefill_budget, edgellm_gen_piece_fn cb,
                                void *user, int *n_active, edgellm_error *err);

/* Emit token t, chosen for stream g (in GEN_DECODE or finishing its prefill) and already
 * recorded in its sampler's history: stop on an end-of-generation token, else frame and
 * pass its piece to cb, count it, and stop on the callback, n_predict or a full sequence
 * (gen_finish, the token kept as the sequence's pending one); otherwise g->next = t and g
 * is GEN_DECODE. The sampling step of edgellm_gen_step ends with it; speculative decoding
 * calls it for every token a verification pass accepts. */
edgellm_status edgellm_gen_emit(edgellm_ctx *c, edgellm_gen *g, int32_t t, edgellm_gen_piece_fn cb, void *user);

/* UTF-8 framing of a stream's bytes: pend[0..*n_pend) (at most 3 bytes held from earlier)
 * + in[0..len) -> out, whole characters only; a byte that cannot begin or continue a
 * well-formed character becomes U+FFFD; an unfinished character at the end stays in pend.
 * out needs room for 3 bytes per byte of pend + in. Returns the bytes written. */
size_t edgellm_utf8_frame(char *pend, int *n_pend, const char *in, size_t len, char *out);

#endif
