build/host/src/status.o: src/status.c src/status.h include/rerand/abi.h \
 src/kernel.h
src/status.h:
include/rerand/abi.h:
src/kernel.h:
