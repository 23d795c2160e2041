#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What `bundle create --base` keeps (docs/bundle-format.md), measured:

  sqfs-layout.py extract BUNDLE MEMBER OUT   the member's image out of a bundle
  sqfs-layout.py compare OLD NEW PLAIN [ERASE]
      prints blocks_equal=K/N (erase blocks of NEW equal to OLD's at the same
      offset), plain_equal=K/N (the same for PLAIN) and size_ratio=NEW/PLAIN
  sqfs-layout.py tree DIR SEED FILES        a tree of text and binary files (seeded)
Used by tests/cli/test-bundle-base.sh; bench/run may call it too."""
import json
import os
import random
import subprocess
import sys


def extract(bundle, member, out):
    info = json.loads(subprocess.check_output(
        [os.environ.get("FLASHCTL", "flashctl"), "--json", "bundle", "info", bundle]))
    img = [i for i in info["images"] if i["slot"] == member][0]
    if img["compression"] != "none":
        sys.exit("extract: %s: %s is compressed" % (bundle, member))
    with open(bundle, "rb") as f:
        f.seek(img["offset"])
        data = f.read(img["size"])
    with open(out, "wb") as f:
        f.write(data)


def equal_blocks(old, new, erase):
    n = (len(new) + erase - 1) // erase
    k = sum(1 for i in range(n) if old[i * erase:(i + 1) * erase] == new[i * erase:(i + 1) * erase])
    return k, n


def compare(old, new, plain, erase=131072):
    o, n, p = (open(x, "rb").read() for x in (old, new, plain))
    k, m = equal_blocks(o, n, erase)
    pk, pm = equal_blocks(o, p, erase)
    print("blocks_equal=%d/%d (%.1f%%) plain_equal=%d/%d (%.1f%%) size_ratio=%.4f" %
          (k, m, 100.0 * k / m, pk, pm, 100.0 * pk / pm, len(n) / len(p)))


def tree(top, seed, files):
    rnd = random.Random(int(seed))
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9)))
             for _ in range(3000)]
    for i in range(int(files)):
        d = os.path.join(top, "d%02d" % (i % 16))
        os.makedirs(d, exist_ok=True)
        size = int(2 ** rnd.uniform(7, 18))       # 128 B .. 256 KiB
        # half text, half binary-like (what programs and data look like to xz)
        out = (" ".join(rnd.choices(words, k=size // 4 + 1)).encode()
               if i == 0 or rnd.random() < 0.5 else rnd.randbytes(size))
        with open(os.path.join(d, "f%04d" % i), "wb") as f:
            f.write(out[:size])


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"extract": extract, "compare": lambda *a: compare(*a[:3], *(int(x) for x in a[3:])),
     "tree": tree}[cmd](*args)
