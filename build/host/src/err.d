build/host/src/err.o: src/err.c src/kernel.h
src/kernel.h:
