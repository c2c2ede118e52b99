build/host/src/bzimage.o: src/bzimage.c src/kernel.h src/shared/util.h
src/kernel.h:
src/shared/util.h:
