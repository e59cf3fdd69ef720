#!/usr/bin/env python3
"""perturb-idx.py — write a perturbed copy of a prepared data set as IDX files, to measure how
a model reacts to contrast, polarity, blur and stroke thickness (doc/acl.md, "Why the learner
fails off-domain"). Pure Python (no numpy); 32×32 ubyte images.

    tools/scripts/perturb-idx.py DATASET_DIR OUT_PREFIX KIND [--split train|val|test] [--classes A-B]
                         [--max-classes N]

DATASET_DIR is a prepared directory (doc/data.md: images.idx, labels.idx, classes.txt, and
split.idx when the split is per image). --split keeps the images of that split (per image from
split.idx, e.g. Fashion-MNIST's test file; else per class from classes.txt, e.g. the meta-test
classes of a stroke set); --classes keeps labels A..B; --max-classes the first N labels seen. Writes OUT_PREFIX-images.idx (ubyte) and OUT_PREFIX-labels.idx (int32), to be
used as `--data idx:OUT_PREFIX-images.idx,OUT_PREFIX-labels.idx`. User data is normalized with its
own pixel mean and std, so an affine intensity change (a·x + b, a > 0) is undone by the
loader; KIND is one of
    copy      unchanged (the control: the same images through the idx: path)
    invert    255 − x (dark ink on a light background)
    gamma2    255·(x/255)² (lower mid-tones: a non-affine contrast change)
    gamma05   255·sqrt(x/255) (brighter mid-tones)
    blur      3×3 box average
    dilate    3×3 maximum (strokes about 2 px thicker)
    erode     3×3 minimum (strokes thinner; thin strokes vanish)
    edges     dilate − erode (outlines: filled shapes become strokes)
Exit: 0 ok, 2 usage, 1 bad input.
"""
import struct
import sys

S = 32


def read_idx(path):
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f'{path}: not an IDX file')
    kind, nd = data[2], data[3]
    dims = struct.unpack('>' + 'I' * nd, data[4:4 + 4 * nd])
    body = data[4 + 4 * nd:]
    if kind == 0x08:
        return dims, body
    if kind == 0x0C:
        n = len(body) // 4
        return dims, struct.unpack('>' + 'i' * n, body[:4 * n])
    raise ValueError(f'{path}: IDX type 0x{kind:02x} not supported')


def neighbours(img, op):
    """3×3 max or min (edges clamp), img a bytes of S·S."""
    out = bytearray(S * S)
    for y in range(S):
        rows = [img[max(0, min(S - 1, y + dy)) * S:(max(0, min(S - 1, y + dy)) + 1) * S]
                for dy in (-1, 0, 1)]
        col = list(map(op, *rows))
        left = [col[0]] + col[:-1]
        right = col[1:] + [col[-1]]
        out[y * S:(y + 1) * S] = bytes(map(op, left, col, right))
    return bytes(out)


def blur(img):
    out = bytearray(S * S)
    for y in range(S):
        for x in range(S):
            t = c = 0
            for dy in (-1, 0, 1):
                yy = y + dy
                if 0 <= yy < S:
                    for dx in (-1, 0, 1):
                        xx = x + dx
                        if 0 <= xx < S:
                            t += img[yy * S + xx]
                            c += 1
            out[y * S + x] = (t + c // 2) // c
    return bytes(out)


GAMMA2 = bytes(round(255 * (v / 255) ** 2) for v in range(256))
GAMMA05 = bytes(round(255 * (v / 255) ** 0.5) for v in range(256))
INVERT = bytes(255 - v for v in range(256))


def perturb(img, kind):
    if kind == 'copy':
        return img
    if kind == 'invert':
        return img.translate(INVERT)
    if kind == 'gamma2':
        return img.translate(GAMMA2)
    if kind == 'gamma05':
        return img.translate(GAMMA05)
    if kind == 'blur':
        return blur(img)
    if kind == 'dilate':
        return neighbours(img, max)
    if kind == 'erode':
        return neighbours(img, min)
    if kind == 'edges':
        d, e = neighbours(img, max), neighbours(img, min)
        return bytes(a - b for a, b in zip(d, e))
    raise KeyError(kind)


KINDS = ('copy', 'invert', 'gamma2', 'gamma05', 'blur', 'dilate', 'erode', 'edges')


def main(argv):
    args, opts = [], {}
    it = iter(argv[1:])
    for a in it:
        if a in ('--split', '--classes', '--max-classes'):
            opts[a] = next(it, None)
        else:
            args.append(a)
    if len(args) != 3 or args[2] not in KINDS or None in opts.values():
        sys.stderr.write(__doc__)
        return 2
    src, prefix, kind = args
    try:
        dims, images = read_idx(f'{src}/images.idx')
        _, labels = read_idx(f'{src}/labels.idx')
        split = None
        if '--split' in opts:
            names = {'train': 1, 'val': 2, 'test': 3}  # mcl_split (dataset.h)
            if opts['--split'] not in names:
                raise ValueError(f"--split {opts['--split']}: want train, val or test")
            want_split = names[opts['--split']]
            try:
                split = read_idx(f'{src}/split.idx')[1]
            except FileNotFoundError:  # per class
                with open(f'{src}/classes.txt', encoding='utf-8') as f:
                    cls = {int(l.split('\t')[0]): l.split('\t')[1] for l in f if l.strip()}
                split = [want_split if cls.get(lab) == opts['--split'] else 0 for lab in labels]
        if len(dims) != 3 or dims[1] != S or dims[2] != S or len(labels) != dims[0]:
            raise ValueError(f'{src}: want N×{S}×{S} images and N labels')
        lo, hi = 0, 1 << 30
        if '--classes' in opts:
            a, _, b = opts['--classes'].partition('-')
            lo, hi = int(a), int(b or a)
        max_classes = int(opts.get('--max-classes', 1 << 30))
    except (OSError, ValueError) as e:
        sys.stderr.write(f'perturb-idx: {e}\n')
        return 1
    seen, out_img, out_lab = {}, [], []
    for i in range(dims[0]):
        lab = labels[i]
        if split is not None and split[i] != want_split:
            continue
        if not lo <= lab <= hi:
            continue
        if lab not in seen:
            if len(seen) == max_classes:
                continue
            seen[lab] = len(seen)
        out_img.append(perturb(images[i * S * S:(i + 1) * S * S], kind))
        out_lab.append(lab)
    n = len(out_img)
    with open(f'{prefix}-images.idx', 'wb') as f:
        f.write(struct.pack('>BBBBIII', 0, 0, 0x08, 3, n, S, S))
        f.write(b''.join(out_img))
    with open(f'{prefix}-labels.idx', 'wb') as f:
        f.write(struct.pack('>BBBBI', 0, 0, 0x0C, 1, n))
        f.write(struct.pack('>' + 'i' * n, *out_lab))
    print(f'{prefix}: {n} images of {len(seen)} classes ({kind})')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
