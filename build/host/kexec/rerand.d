build/host/kexec/rerand.o: kexec/rerand.c kexec/cli.h
kexec/cli.h:
