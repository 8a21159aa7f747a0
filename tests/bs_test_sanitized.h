/* Whether this test is built under ASan or TSan (gcc says so with
 * __SANITIZE_*__, clang with __has_feature): BS_TEST_SANITIZED 1 or 0.
 * A sanitizer reserves terabytes of address space for its shadow and
 * backs the shadow of what it touches. */
#ifndef BS_TEST_SANITIZED_H
#define BS_TEST_SANITIZED_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BS_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BS_TEST_SANITIZED 1
#endif
#endif
#ifndef BS_TEST_SANITIZED
#define BS_TEST_SANITIZED 0
#endif

#endif
