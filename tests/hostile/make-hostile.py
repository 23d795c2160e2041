#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Generate corrupted bundles from one good signed bundle.

    make-hostile.py GOOD.fbd GOOD-GZIP.fbd KEY.pem OTHER-KEY.pem SLOT-SIZE OUTDIR

Writes OUTDIR/NNN-<category>-<what>.fbd and OUTDIR/index.tsv with one line
per bundle: file, category, stage. stage "pre" means the corruption must be
refused before anything is written to flash (the env must stay exactly as
it was); "payload" means it can only be found while the payload streams
(hash, gzip crc, superblock held back, truncation, trailing bytes): the
install engine may have marked the target slot bad by then.

Bundle format: docs/bundle-format.md. Re-signing (openssl pkeyutl, Ed25519)
makes a manifest corruption reach the parser stage it is aimed at instead
of stopping at the signature check; the header crc is recomputed where a
header field is the target.
"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import zlib
from collections import OrderedDict

good_path, gzip_path, key, other_key, slot_size, out = sys.argv[1:7]
slot_size = int(slot_size)
os.makedirs(out, exist_ok=True)


def split(b):
    magic, major, minor, msize, nsig, res1, crc, res2 = struct.unpack("<8sHHIHHIQ", b[:32])
    assert magic == b"FLASHDBL" and zlib.crc32(b[:20]) == crc, "not a good bundle"
    m = b[32:32 + msize]
    s = b[32 + msize:32 + msize + 96 * nsig]
    p = b[32 + msize + 96 * nsig:]
    return dict(major=major, minor=minor, msize=msize, nsig=nsig, manifest=m,
                sigs=[s[i:i + 96] for i in range(0, len(s), 96)], payload=p)


def header(major=1, minor=0, msize=0, nsig=1, res1=0, res2=0, crc=None):
    h = struct.pack("<8sHHIHH", b"FLASHDBL", major, minor, msize, nsig, res1)
    if crc is None:
        crc = zlib.crc32(h)
    return h + struct.pack("<IQ", crc, res2)


def canon(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def sign(manifest, keyfile):
    # Ed25519 is one-shot: openssl needs a file, not a pipe
    tmp = os.path.join(out, ".to-sign")
    with open(tmp, "wb") as f:
        f.write(manifest)
    r = subprocess.run(["openssl", "pkeyutl", "-sign", "-rawin", "-inkey", keyfile, "-in", tmp],
                       capture_output=True, check=True)
    os.unlink(tmp)
    assert len(r.stdout) == 64
    return r.stdout


def key_id(keyfile):
    der = subprocess.run(["openssl", "pkey", "-in", keyfile, "-pubout", "-outform", "DER"],
                         capture_output=True, check=True).stdout
    return hashlib.sha256(der[-32:]).digest()


good = open(good_path, "rb").read()
G = split(good)
GZ = split(open(gzip_path, "rb").read())
M = json.loads(G["manifest"], object_pairs_hook=OrderedDict)
assert canon(M) == G["manifest"], "python's serialisation is not the canonical form"
KID = key_id(key)
OKID = key_id(other_key)
assert G["sigs"][0][:32] == KID

n = 0
index = []


def emit(cat, what, data, stage="pre"):
    global n
    n += 1
    name = f"{n:03d}-{cat}-{what}.fbd"
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    index.append((name, cat, stage))


def bundle(manifest, payload, keys=(key,), sigs=None, **hdr):
    if sigs is None:
        sigs = [key_id(k) + sign(manifest, k) for k in keys] if keys != (key,) else \
               [KID + sign(manifest, key)]
    h = dict(msize=len(manifest), nsig=len(sigs))
    h.update(hdr)
    return header(**h) + manifest + b"".join(sigs) + payload


def resigned(mut, payload=None, stage="pre"):
    """A copy of the manifest changed by mut(dict) (or a bytes result), signed."""
    m = json.loads(G["manifest"], object_pairs_hook=OrderedDict)
    r = mut(m)
    mb = r if isinstance(r, bytes) else canon(m)
    return bundle(mb, G["payload"] if payload is None else payload)


def flip(data, off, bit=0):
    b = bytearray(data)
    b[off] ^= 1 << bit
    return bytes(b)


msize = G["msize"]
sig_off = 32 + msize
pay_off = sig_off + 96 * G["nsig"]
total = len(good)
plen = len(G["payload"])

# ---- 1. bit flips, not re-signed ----
for off in range(32):                               # every header byte
    emit("flip-header", f"byte{off}", flip(good, off, off % 8))
for k in range(40):                                 # spread over the manifest
    off = 32 + (k * (msize - 1)) // 39
    emit("flip-manifest", f"off{off}", flip(good, off, k % 8))
for k in range(24):                                 # key id and signature
    off = sig_off + (k * 95) // 23
    emit("flip-signature", f"off{off}", flip(good, off, k % 8))
for k in range(16):                                 # squashfs superblock (held back)
    off = pay_off + k * 6
    emit("flip-superblock", f"off{off}", flip(good, off, k % 8), "payload")
for k in range(28):                                 # the rest of the payload
    off = pay_off + 96 + (k * (plen - 97)) // 27
    emit("flip-payload", f"off{off}", flip(good, off, k % 8), "payload")
gz = open(gzip_path, "rb").read()
gz_pay = 32 + GZ["msize"] + 96 * GZ["nsig"]
for k in range(12):                                 # gzip member: header, deflate, trailer
    off = gz_pay + (k * (len(GZ["payload"]) - 1)) // 11
    emit("flip-gzip", f"off{off}", flip(gz, off, k % 8), "payload")

# ---- 2. truncations at every section boundary, +/- 1 ----
cuts = {0, 1, 7, 8, 31, 32, 33, 32 + msize // 2, sig_off - 1, sig_off, sig_off + 1,
        sig_off + 32, pay_off - 1, pay_off, pay_off + 1, pay_off + 95, pay_off + 96,
        pay_off + 97, pay_off + plen // 2, total - 1}
for c in sorted(cuts):
    emit("truncate", f"at{c}", good[:c], "payload" if c > pay_off else "pre")
emit("trailing", "1byte", good + b"\0", "payload")
emit("trailing", "4KiB", good + os.urandom(4096), "payload")
emit("trailing", "second-bundle", good + good, "payload")

# ---- 3. header lengths and counts (crc recomputed) ----
body = good[32:]
for ms in (0, 1, 2, msize - 1, msize + 1, 65536, 65537, 0x7FFFFFFF, 0xFFFFFFFF, total):
    emit("header-msize", f"{ms}", header(msize=ms, nsig=1) + body)
for ns in (0, 2, 4, 5, 0xFFFF):
    emit("header-nsig", f"{ns}", header(msize=msize, nsig=ns) + body)
emit("header", "major2", header(major=2, msize=msize) + body)  # a 1.0 manifest under it
emit("header", "major3", header(major=3, msize=msize) + body)
emit("header", "major0", header(major=0, msize=msize) + body)
emit("header", "major65535", header(major=0xFFFF, msize=msize) + body)
emit("header", "minor1", header(minor=1, msize=msize) + body)
emit("header", "reserved1", header(msize=msize, res1=1) + body)
emit("header", "reserved2", header(msize=msize, res2=1 << 63) + body)
emit("header", "bad-crc", header(msize=msize, crc=0) + body)
emit("header", "magic", b"FLASHDBX" + good[8:])
emit("header", "squashfs-not-bundle", G["payload"])
emit("header", "empty", b"")

# ---- 4. signatures ----
sig = G["sigs"][0]
emit("sig", "unsigned", bundle(G["manifest"], G["payload"], sigs=[]))
emit("sig", "unknown-key", bundle(G["manifest"], G["payload"],
                                  sigs=[OKID + sign(G["manifest"], other_key)]))
emit("sig", "unknown-key-id-trusted-sig", bundle(G["manifest"], G["payload"],
                                                 sigs=[OKID + sig[32:]]))
emit("sig", "trusted-id-other-sig", bundle(G["manifest"], G["payload"],
                                           sigs=[KID + sign(G["manifest"], other_key)]))
emit("sig", "same-key-twice", bundle(G["manifest"], G["payload"], sigs=[sig, sig]))
emit("sig", "good-then-bad", bundle(G["manifest"], G["payload"],
                                    sigs=[sig, KID + bytes(64)]))
emit("sig", "zero", bundle(G["manifest"], G["payload"], sigs=[bytes(96)]))
emit("sig", "five", bundle(G["manifest"], G["payload"], sigs=[sig] * 5))
other_m = canon(OrderedDict(list(M.items())[:3] + [("version", "9.9")] + list(M.items())[4:]))
emit("sig", "signature-of-other-manifest", bundle(G["manifest"], G["payload"],
                                                  sigs=[KID + sign(other_m, key)]))

# ---- 5. manifest content, re-signed: reaches the parser / validator ----
img = lambda m: m["images"][0]


def setf(path, value):
    def mut(m):
        o = m
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value
    return mut


def delf(path):
    def mut(m):
        o = m
        for k in path[:-1]:
            o = o[k]
        del o[path[-1]]
    return mut


def values(cat, path, named):
    """One case per (what, value): the field at path set to value."""
    return [(cat, what, setf(path, v)) for what, v in named]


SLOT = ["images", 0, "slot"]
cases = [
    *values("compat", ["compatible"], [
        ("wrong", "flashd,other-board"), ("empty", ""), ("prefix", "flashd,nandsim-128"),
        ("space", "flashd, nandsim-128m"), ("long", "x" * 65), ("number", 1)]),
    *values("version", ["format_major"], [
        ("major2", 2), ("major3", 3), ("major0", 0), ("major-string", "1")]),
    ("version", "minor-mismatch", setf(["format_minor"], 1)),
    *values("version", ["version"], [
        ("empty", ""), ("space", "2.0 beta"), ("control", "2.0\n"), ("long", "1" * 65)]),
    *values("date", ["build_date"], [
        ("month13", "2026-13-01T00:00:00Z"), ("feb30", "2026-02-30T00:00:00Z"),
        ("format", "yesterday")]),
    *values("desc", ["description"], [("control", "bad\x07bell"), ("long", "d" * 257)]),
    ("field", "unknown", setf(["extra"], 1)),
    ("field", "missing-images", delf(["images"])),
    ("field", "missing-compatible", delf(["compatible"])),
    ("field", "missing-sha256", lambda m: img(m).pop("sha256")),
    ("images", "empty", setf(["images"], [])),
    ("images", "object", setf(["images"], {"rootfs": 1})),
    ("images", "nine", lambda m: m.__setitem__("images", [dict(img(m), slot=f"s{i}") for i in range(9)])),
    ("images", "duplicate", lambda m: m["images"].append(OrderedDict(img(m)))),
    ("images", "unknown-member", setf(SLOT, "appfs")),
    ("images", "kernel-too-big", lambda m: (img(m).__setitem__("slot", "kernel"),
                                            img(m).__setitem__("size", 4 * 1024 * 1024 + 4096),
                                            img(m).__setitem__("stored_size", 4 * 1024 * 1024 + 4096))),
    *values("name", SLOT, [
        ("dotdot", "../rootfs"), ("absolute", "/dev/mtd0"), ("slash", "rootfs/../../etc"),
        ("upper", "ROOTFS"), ("empty", ""), ("long", "r" * 33), ("space", "root fs"),
        ("nul", "rootfs\0x"), ("utf8", "r\u00f6otfs"), ("shell", "$(reboot)")]),
    ("type", "ext4", setf(["images", 0, "type"], "ext4")),
    ("compression", "xz", setf(["images", 0, "compression"], "xz")),
    *values("size", ["images", 0, "size"], [("zero", 0), ("negative", -1)]),
    ("size", "slot-plus-1", lambda m: (img(m).__setitem__("size", slot_size + 1),
                                       img(m).__setitem__("stored_size", slot_size + 1))),
    ("size", "2^40+1", lambda m: (img(m).__setitem__("size", 2 ** 40 + 1),
                                  img(m).__setitem__("stored_size", 2 ** 40 + 1))),
    ("size", "2^64", lambda m: (img(m).__setitem__("size", 2 ** 64),
                                img(m).__setitem__("stored_size", 2 ** 64))),
    ("size", "string", lambda m: img(m).__setitem__("size", str(img(m)["size"]))),
    ("size", "float", lambda m: img(m).__setitem__("size", img(m)["size"] + 0.5)),
    ("size", "stored-differs", lambda m: img(m).__setitem__("stored_size", img(m)["size"] - 1)),
    ("size", "larger-than-payload", lambda m: (img(m).__setitem__("size", img(m)["size"] + 4096),
                                               img(m).__setitem__("stored_size", img(m)["size"]))),
    ("sha256", "upper", lambda m: img(m).__setitem__("sha256", img(m)["sha256"].upper())),
    ("sha256", "short", lambda m: img(m).__setitem__("sha256", img(m)["sha256"][:63])),
    ("sha256", "nonhex", lambda m: img(m).__setitem__("sha256", "g" * 64)),
    ("sha256", "other-image", lambda m: img(m).__setitem__("sha256", "0" * 64)),
    ("json", "whitespace", lambda m: canon(m).replace(b",", b", ", 1)),
    # (another key order is not a corruption: json-c keeps the order it
    # read, so the manifest is canonical in any order and what was signed
    # is what is parsed)
    ("json", "key-case", lambda m: canon(m).replace(b'"version"', b'"Version"')),
    ("json", "duplicate-key", lambda m: canon(m)[:-1] + b',"version":"9.9"}'),
    ("json", "trailing", lambda m: canon(m) + b" "),
    ("json", "not-object", lambda m: b"[" + canon(m) + b"]"),
    ("json", "null", lambda m: b"null"),
    ("json", "nul-inside", lambda m: canon(m)[:10] + b"\0" + canon(m)[10:]),
    ("json", "deep", lambda m: canon(m)[:-1] + b',"extra":' + b"[" * 5000 + b"]" * 5000 + b"}"),
    ("json", "exponent", lambda m: canon(m).replace(b'"format_minor":0', b'"format_minor":0e0')),
    ("json", "huge-number", lambda m: canon(m).replace(b'"format_minor":0', b'"format_minor":' + b"9" * 400)),
    ("json", "bad-utf8", lambda m: canon(m).replace(b'"2.0"', b'"2.\xff"')),
    ("json", "escaped-slash", lambda m: canon(m).replace(b',"version"', b',"vers\\u0069on"')),
]
for cat, what, mut in cases:
    emit("manifest-" + cat, what, resigned(mut))

# Payloads that match their (re-signed) manifest hash but are not what the
# slot may take: caught by the squashfs superblock check or the size checks.
def with_payload(p, what):
    def mut(m):
        img(m)["size"] = img(m)["stored_size"] = len(p)
        img(m)["sha256"] = hashlib.sha256(p).hexdigest()
    emit("payload-signed", what, resigned(mut, p), "payload")


sq = G["payload"]
with_payload(os.urandom(len(sq)), "not-squashfs")
with_payload(b"\0" * 4096, "zeros")
with_payload(sq[:95], "shorter-than-superblock")
with_payload(sq[:28] + struct.pack("<H", 3) + sq[30:], "squashfs-v3")
with_payload(sq[:20] + struct.pack("<H", 9) + sq[22:], "unknown-compressor")
with_payload(sq[:12] + struct.pack("<I", 3000) + sq[16:], "bad-block-size")
with_payload(sq[:40] + struct.pack("<Q", len(sq) + 4096) + sq[48:], "bytes-used-past-end")
with_payload(sq[:40] + struct.pack("<Q", 2 ** 63) + sq[48:], "bytes-used-huge")
with_payload(struct.pack(">I", 0x73717368) + sq[4:], "big-endian-magic")

with open(os.path.join(out, "index.tsv"), "w") as f:
    for row in index:
        f.write("\t".join(row) + "\n")
print(f"{n} corrupted bundles in {out}")
