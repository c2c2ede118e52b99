/* SPDX-License-Identifier: GPL-2.0-only */
/* The x86 boot protocol's setup-header offsets (Documentation/arch/x86/
 * boot.rst), as file offsets in a bzImage: one list for the kernel reader
 * (bzimage.c) and the image writer and reader. */
#ifndef RERAND_SETUPHDR_H
#define RERAND_SETUPHDR_H

#define H_SETUP_SECTS   0x1f1
#define H_SYSSIZE       0x1f4
#define H_VID_MODE      0x1fa
#define H_BOOT_FLAG     0x1fe
#define H_JUMP          0x200
#define H_MAGIC         0x202
#define H_VERSION       0x206
#define H_KVER          0x20e
#define H_LOADFLAGS     0x211
#define H_CODE32_START  0x214
#define H_INITRD_MAX    0x22c
#define H_KALIGN        0x230
#define H_RELOCATABLE   0x234
#define H_MIN_ALIGN     0x235
#define H_XLOADFLAGS    0x236
#define H_CMDLINE_SIZE  0x238
#define H_PAYLOAD_OFFSET 0x248
#define H_PAYLOAD_LENGTH 0x24c
#define H_PREF_ADDRESS  0x258
#define H_INIT_SIZE     0x260
#define H_END           0x26c            /* end of the 2.15 header */
#define H_KVER_STRING   0x280

#endif
