"""What ptxas recorded about each kernel in a cubin, read from its ELF without a GPU.

A cubin keeps per-kernel resource attributes in its ``.nv.info`` section: records of a format
byte, an attribute byte and a value, where the sized values (``EIFMT_SVAL``) of the
attributes read here hold the function's symbol index and a 32-bit number. Checked against
``cuobjdump -res-usage`` on CUDA 13 cubins (NVRTC, nvcc and numba-cuda's nvJitLink; sm_80 /
sm_90) and against the driver's local memory on the H200 (run 214).
"""

from __future__ import annotations

import struct

__all__ = ["frame_bytes"]

_SHT_SYMTAB = 2
_SHT_CUDA_INFO = 0x70000000
_EIFMT_NVAL, _EIFMT_BVAL, _EIFMT_HVAL, _EIFMT_SVAL = 1, 2, 3, 4
_EIATTR_FRAME_SIZE = 0x11  # bytes of stack frame a thread: local arrays and register spills


def _sections(image: bytes) -> list[tuple[int, int, int, int, int]]:
    """(name offset, type, file offset, size, link) of each section of a 64-bit ELF."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        raise ValueError("not a little-endian 64-bit ELF image (a cubin)")
    shoff = struct.unpack_from("<Q", image, 0x28)[0]
    entsize, count = struct.unpack_from("<HH", image, 0x3A)
    out = []
    for i in range(count):
        name, kind, _, _, offset, size, link = struct.unpack_from(
            "<IIQQQQI", image, shoff + i * entsize
        )
        out.append((name, kind, offset, size, link))
    return out


def _symbol_names(image: bytes, sections: list) -> list[str]:
    for _, kind, offset, size, link in sections:
        if kind == _SHT_SYMTAB:
            strtab = sections[link][2]
            names = []
            for pos in range(offset, offset + size, 24):  # Elf64_Sym
                start = strtab + struct.unpack_from("<I", image, pos)[0]
                names.append(image[start : image.index(b"\0", start)].decode())
            return names
    raise ValueError("cubin has no symbol table")


def frame_bytes(image: bytes) -> dict[str, int]:
    """Stack frame (bytes a thread) of each function of a cubin, by symbol name.

    This is the local memory a kernel's launch reserves for each thread (spilled registers and
    local arrays): what ``ptxas -v`` prints as "bytes stack frame" and the driver reports as
    ``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES``, known here without loading the module.

    Parameters
    ----------
    image : bytes
        A cubin (ELF) image, as NVRTC or nvJitLink produce it.

    Returns
    -------
    dict of str to int
        Mangled function name -> frame bytes; functions without the attribute are absent.

    Raises
    ------
    ValueError
        If ``image`` is not a 64-bit ELF or an attribute record is malformed.
    """
    image = bytes(image)
    sections = _sections(image)
    names = _symbol_names(image, sections)
    out: dict[str, int] = {}
    shstrtab = sections[struct.unpack_from("<H", image, 0x3E)[0]][2]
    for name, kind, offset, size, _ in sections:
        # the module-wide section holds the frame sizes (".nv.info.<kernel>" the parameters)
        if kind != _SHT_CUDA_INFO or image[shstrtab + name : shstrtab + name + 9] != b".nv.info\0":
            continue
        pos, end = offset, offset + size
        while pos + 4 <= end:
            fmt, attr = image[pos], image[pos + 1]
            if fmt in (_EIFMT_NVAL, _EIFMT_BVAL, _EIFMT_HVAL):
                pos += 4  # format, attribute and a 16-bit field (unused by NVAL records)
            elif fmt == _EIFMT_SVAL:
                (length,) = struct.unpack_from("<H", image, pos + 2)
                if attr == _EIATTR_FRAME_SIZE:
                    if length != 8:
                        raise ValueError(f"frame size record of {length} bytes (expected 8)")
                    sym, value = struct.unpack_from("<II", image, pos + 4)
                    out[names[sym]] = value
                pos += 4 + length
            else:
                raise ValueError(f"unknown .nv.info record format {fmt} at offset {pos}")
    return out
