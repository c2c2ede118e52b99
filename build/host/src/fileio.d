build/host/src/fileio.o: src/fileio.c src/image.h include/rerand/abi.h \
 src/kernel.h
src/image.h:
include/rerand/abi.h:
src/kernel.h:
