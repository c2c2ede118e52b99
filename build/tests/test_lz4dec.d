build/tests/test_lz4dec: tests/unit/test_lz4dec.c tests/unit/test.h \
 src/shared/lz4dec.h
tests/unit/test.h:
src/shared/lz4dec.h:
