/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Scope-bound cleanup, in the style systemd made familiar: a variable marked
 * _cleanup_free_ is freed, _cleanup_close_ closed, _cleanup_fclose_ fclosed,
 * _cleanup_json_ put (json-c), _cleanup_unlink_ unlinked when it goes out of scope, on every return.
 * A function then has one exit per outcome instead of a chain of frees that
 * each early return must repeat.  TAKE_PTR and TAKE_FD hand the value on
 * (return it, or give it to an owner) and leave NULL or -1 behind, so the
 * cleanup does nothing.
 *
 * GCC and Clang run the cleanup with a pointer to the variable; every
 * variable so marked must be initialized where it is declared.
 */
#ifndef RERAND_CLEANUP_H
#define RERAND_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

static inline void rr_freep(void *p)
{
	free(*(void **)p);
}

/* close() keeps errno as it was: a cleanup runs after the error a caller
 * is about to report was set. */
static inline void rr_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void rr_fclosep(FILE **f)
{
	if (*f) {
		int saved = errno;
		fclose(*f);
		errno = saved;
	}
}

/* A file to remove on the way out: the variable points at its name (a
 * temporary file once created), and is set to NULL once the file is kept
 * (renamed into place). */
static inline void rr_unlinkp(char **path)
{
	if (*path) {
		int saved = errno;
		unlink(*path);
		errno = saved;
	}
}

/* json-c's own prototype, declared here so that a file using the other
 * helpers needs no json-c headers; only a file that uses _cleanup_json_
 * links json-c. */
struct json_object;
int json_object_put(struct json_object *obj);

static inline void rr_json_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}

#define _cleanup_free_   _cleanup_(rr_freep)
#define _cleanup_close_  _cleanup_(rr_closep)
#define _cleanup_fclose_ _cleanup_(rr_fclosep)
#define _cleanup_json_   _cleanup_(rr_json_putp)
#define _cleanup_unlink_ _cleanup_(rr_unlinkp)

/* A cleanup for a library's own destructor: RR_DEFINE_CLEANUP_FUNC(BIO *,
 * BIO_free) defines BIO_freep, for _cleanup_(BIO_freep); NULL is left
 * alone, so the variable may stay unset on the paths that never get it. */
#define RR_DEFINE_CLEANUP_FUNC(type, func)              \
	static inline void func##p(type *p)             \
	{                                               \
		if (*p)                                 \
			func(*p);                       \
	}

/* The value of VAR, which no longer owns it: VAR is left NULL. */
#define TAKE_PTR(var) ({                        \
	__typeof__(var) *_pp_ = &(var);         \
	__typeof__(var) _p_ = *_pp_;            \
	*_pp_ = NULL;                           \
	_p_;                                    \
})

/* The fd in VAR, which no longer owns it: VAR is left -1. */
#define TAKE_FD(var) ({                         \
	int *_fdp_ = &(var);                    \
	int _fd_ = *_fdp_;                      \
	*_fdp_ = -1;                            \
	_fd_;                                   \
})

#endif
