build/host/kexec/cmd_verify.o: kexec/cmd_verify.c kexec/cli.h \
 src/status.h include/rerand/abi.h src/kernel.h
kexec/cli.h:
src/status.h:
include/rerand/abi.h:
src/kernel.h:
