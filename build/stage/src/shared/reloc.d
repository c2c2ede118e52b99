build/stage/src/shared/reloc.o: src/shared/reloc.c include/rerand/abi.h \
 src/shared/reloc.h src/shared/util.h
include/rerand/abi.h:
src/shared/reloc.h:
src/shared/util.h:
