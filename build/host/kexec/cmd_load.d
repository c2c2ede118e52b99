build/host/kexec/cmd_load.o: kexec/cmd_load.c kexec/cli.h src/image.h \
 include/rerand/abi.h src/kernel.h src/shared/rng.h src/shared/util.h
kexec/cli.h:
src/image.h:
include/rerand/abi.h:
src/kernel.h:
src/shared/rng.h:
src/shared/util.h:
