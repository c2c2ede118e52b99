build/host/src/shared/lz4dec.o: src/shared/lz4dec.c src/shared/lz4dec.h
src/shared/lz4dec.h:
