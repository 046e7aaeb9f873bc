#!/usr/bin/env python3
"""Run a command on a host that refuses some prctl(2) options, as some sandboxes do.

    refuse-prctl.py OPTION[,OPTION...] -- COMMAND [ARG...]

OPTION is `subreaper` (PR_SET_CHILD_SUBREAPER) or `pdeathsig` (PR_SET_PDEATHSIG). A seccomp
filter (installed with ctypes: no library beyond Python's own) makes the kernel answer those
prctl calls with EINVAL, as qemu-user does for the subreaper; every other call is allowed. The
filter is inherited by every process the command starts, across exec. Linux x86-64 and arm64.
Exits 2 with one line on stderr when the filter cannot be installed.
"""

import ctypes
import errno
import os
import platform
import struct
import sys

OPTIONS = {"subreaper": 36, "pdeathsig": 1}  # PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG
ARCHES = {  # AUDIT_ARCH_*, __NR_prctl
    "x86_64": (0xC000003E, 157),
    "aarch64": (0xC00000B7, 167),
}
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
LD_W_ABS, JEQ_K, RET_K = 0x20, 0x15, 0x06


def fail(msg):
    print(f"refuse-prctl: {msg}", file=sys.stderr)
    sys.exit(2)


def program(arch, nr, refused):
    """A classic BPF program over struct seccomp_data (nr at 0, arch at 4, args[0] at 16)."""
    n = len(refused)
    ins = [
        (LD_W_ABS, 0, 0, 4),
        (JEQ_K, 0, 3 + n, arch),  # another ABI: allow
        (LD_W_ABS, 0, 0, 0),
        (JEQ_K, 0, 1 + n, nr),  # not prctl: allow
        (LD_W_ABS, 0, 0, 16),  # the option (low 32 bits of args[0])
    ]
    for i, option in enumerate(refused):
        ins.append((JEQ_K, n - i, 0, option))  # jump to the refusal
    ins.append((RET_K, 0, 0, SECCOMP_RET_ALLOW))
    ins.append((RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EINVAL))
    return b"".join(struct.pack("=HBBI", *i) for i in ins), len(ins)


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[1] != "--":
        fail("usage: refuse-prctl.py OPTION[,OPTION...] -- COMMAND [ARG...]")
    names = args[0].split(",")
    unknown = [n for n in names if n not in OPTIONS]
    if unknown:
        fail(f"unknown option {unknown[0]!r}: expected {', '.join(OPTIONS)}")
    machine = platform.machine()
    if sys.platform != "linux" or machine not in ARCHES:
        fail(f"only Linux on {', '.join(ARCHES)}, not {sys.platform} {machine}")
    code, count = program(*ARCHES[machine], [OPTIONS[n] for n in names])
    buf = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(count, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        fail(f"PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        fail(f"PR_SET_SECCOMP: {os.strerror(ctypes.get_errno())}")
    # The filter holds: the refused options now fail here too.
    for n in names:
        if libc.prctl(OPTIONS[n], 0, None, 0, 0) == 0 or ctypes.get_errno() != errno.EINVAL:
            fail(f"the filter did not refuse {n}")
    try:
        os.execvp(args[2], args[2:])
    except OSError as e:
        fail(f"cannot run {args[2]}: {e}")


if __name__ == "__main__":
    main()
