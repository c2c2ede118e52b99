build/host/src/image.o: src/image.c src/image.h include/rerand/abi.h \
 src/kernel.h src/shared/reloc.h src/shared/select.h src/shared/util.h
src/image.h:
include/rerand/abi.h:
src/kernel.h:
src/shared/reloc.h:
src/shared/select.h:
src/shared/util.h:
