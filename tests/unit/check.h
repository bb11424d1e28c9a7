/*
** check.h -- the assertion macros of the C unit tests. A failed check prints
** file:line and the failing expression and counts the failure; the test's
** main returns check_finish(), which is 0 only when every check held.
*/
#ifndef LATTICE_TEST_CHECK_H
#define LATTICE_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                 \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      check_failures++;                                             \
    }                                                               \
  } while (0)

/* CHECK with a printf-style explanation printed on failure. */
#define CHECKF(cond, ...)                                           \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                 \
      fputc('\n', stderr);                                          \
      check_failures++;                                             \
    }                                                               \
  } while (0)

#define CHECK_STREQ(a, b)                                           \
  do {                                                              \
    const char *check_a_ = (a), *check_b_ = (b);                    \
    if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) { \
      fprintf(stderr, "%s:%d: CHECK_STREQ failed: %s == %s\n  left:  %s\n  right: %s\n", \
              __FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",      \
              check_b_ ? check_b_ : "(null)");                      \
      check_failures++;                                             \
    }                                                               \
  } while (0)

/* haystack contains needle */
#define CHECK_CONTAINS(hay, needle)                                 \
  do {                                                              \
    const char *check_h_ = (hay), *check_n_ = (needle);             \
    if (!check_h_ || !strstr(check_h_, check_n_)) {                 \
      fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: \"%s\" not in:\n  %s\n", __FILE__, \
              __LINE__, check_n_, check_h_ ? check_h_ : "(null)");  \
      check_failures++;                                             \
    }                                                               \
  } while (0)

static inline int check_finish(const char *name) {
  if (check_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

#endif
