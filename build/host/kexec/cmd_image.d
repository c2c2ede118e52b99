build/host/kexec/cmd_image.o: kexec/cmd_image.c kexec/cli.h src/image.h \
 include/rerand/abi.h src/kernel.h src/kernel.h src/shared/select.h \
 src/status.h
kexec/cli.h:
src/image.h:
include/rerand/abi.h:
src/kernel.h:
src/kernel.h:
src/shared/select.h:
src/status.h:
