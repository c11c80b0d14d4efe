/*
 * grow.h: arrays that grow by doubling, the one way steptrace grows them
 * (git's ALLOC_GROW, returning instead of dying):
 *
 *   struct thing *v = NULL;
 *   size_t n = 0, alloc = 0;
 *   if (ALLOC_GROW(v, n + 1, alloc) < 0)
 *           return -1;                      // "out of memory" already printed
 *   v[n++] = x;
 *
 * `alloc` is a size_t lvalue holding the capacity in elements. On failure
 * the array and its capacity are untouched.
 */
#ifndef STEPTRACE_LIB_GROW_H
#define STEPTRACE_LIB_GROW_H

#include <stddef.h>

/* *pp (a T *, passed by address) to hold at least `need` elements of `elem` bytes. 0 or -1. */
int grow_array(void *pp, size_t *alloc, size_t elem, size_t need);

#define ALLOC_GROW(p, need, alloc) grow_array(&(p), &(alloc), sizeof(*(p)), (need))

#endif
