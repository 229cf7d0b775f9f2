/* A straightforward scalar Viterbi in C: the reference the bar is stated against.
   Built by bench_inference.py with -O2 -fno-tree-vectorize (scalar on purpose). */
#include <stdint.h>
#include <stdlib.h>
#include <math.h>

double viterbi_scalar(const double *unary, const double *pairwise, int64_t T, int64_t K,
                      int64_t *labels) {
    double *delta = malloc(K * sizeof(double)), *next = malloc(K * sizeof(double));
    int32_t *bp = malloc(T * K * sizeof(int32_t));
    for (int64_t k = 0; k < K; k++) delta[k] = unary[k];
    for (int64_t t = 1; t < T; t++) {
        for (int64_t j = 0; j < K; j++) {
            double best = -INFINITY; int32_t arg = 0;
            for (int64_t i = 0; i < K; i++) {
                double v = delta[i] + pairwise[i * K + j];
                if (v > best) { best = v; arg = (int32_t)i; }
            }
            next[j] = best + unary[t * K + j];
            bp[t * K + j] = arg;
        }
        double *tmp = delta; delta = next; next = tmp;
    }
    int64_t k = 0;
    for (int64_t j = 1; j < K; j++) if (delta[j] > delta[k]) k = j;
    double score = delta[k];
    labels[T - 1] = k;
    for (int64_t t = T - 1; t > 0; t--) { k = bp[t * K + k]; labels[t - 1] = k; }
    free(delta); free(next); free(bp);
    return score;
}
