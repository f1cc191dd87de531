import ctypes

libc = ctypes.CDLL(None)
libc.ptrace(16, 1, 0, 0)
ctypes.memmove(0x1000, b"\x90" * 16, 16)
