#!/usr/bin/env python3
"""acl-safetensors.py — read a safetensors file the way PyTorch users get one, with nothing but
the Python standard library, and check an ACL export of `metacl ckpt export --format
safetensors` against the official model's state_dict names and shapes (doc/interop.md).

  python3 tools/scripts/acl-safetensors.py FILE            # list tensors (name, dtype, shape) and metadata
  python3 tools/scripts/acl-safetensors.py FILE --acl      # also: the names and shapes the official
                                                   #   CompatStatefulConvSRWMModel (use_instance_norm,
                                                   #   extra_label) has for the config in the
                                                   #   file's metadata, exactly, nothing else
  python3 tools/scripts/acl-safetensors.py FILE --torch    # also: load into torch tensors (needs torch)

The reader is independent of metacl's C reader: the header length, the JSON header, the
dtypes and the tiling of the data buffer are checked here again. Exit: 0 ok, 1 a bad file or
a failed check, 2 usage.
"""
import json
import struct
import sys

SIZES = {"F32": 4, "F16": 2, "BF16": 2}


def fail(msg):
    print("acl-safetensors: " + msg, file=sys.stderr)
    sys.exit(1)


def read(path):
    """(tensors {name: (dtype, shape, bytes)}, metadata dict) of a safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail(f"{path}: too short")
    (n,) = struct.unpack("<Q", blob[:8])
    if n < 2 or n > len(blob) - 8:
        fail(f"{path}: header length {n} is absurd")
    pairs = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=lambda kv: kv)
    names = [k for k, _ in pairs]
    if len(set(names)) != len(names):
        fail(f"{path}: a name appears twice")
    header = dict(pairs)
    meta = dict(header.pop("__metadata__", []))
    buf = blob[8 + n:]
    spans, tensors = [], {}
    for name, entry in header.items():
        e = dict(entry)
        dtype, shape, (b, end) = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in SIZES:
            fail(f"{path}: {name}: dtype {dtype}")
        numel = 1
        for d in shape:
            numel *= d
        if end - b != numel * SIZES[dtype] or not 0 <= b <= end <= len(buf):
            fail(f"{path}: {name}: offsets [{b}, {end}] do not fit its shape {shape}")
        spans.append((b, end, name))
        tensors[name] = (dtype, shape, buf[b:end])
    at = 0
    for b, end, name in sorted(spans):
        if b != at:
            fail(f"{path}: {name} starts at {b}, expected {at}")
        at = end
    if at != len(buf):
        fail(f"{path}: {len(buf) - at} bytes after the last tensor")
    return tensors, meta


def official(cfg):
    """{name: shape} of the official model (use_instance_norm, extra_label) for a metacl config."""
    n, hd, h = int(cfg["n_way"]), int(cfg["hidden"]), int(cfg["heads"])
    c, cin, s = int(cfg["conv_channels"]), int(cfg["in_channels"]), int(cfg["image_size"])
    d, ff, f = hd // h, int(cfg["ff_mult"]) * hd, int(cfg["conv_channels"]) * (s // 16) ** 2
    want = {}
    for i in range(4):
        want[f"conv_layers.{i}.0.weight"] = [c, cin if i == 0 else c, 3, 3]
        for k in ("0.bias", "1.weight", "1.bias"):
            want[f"conv_layers.{i}.{k}"] = [c]
    want["input_proj.weight"] = [hd, f + n + 1]
    want["input_proj.bias"] = [hd]
    for layer in range(int(cfg["layers"])):
        a, b = 2 * layer, 2 * layer + 1
        for k in ("W_y", "W_q", "W_k"):
            want[f"layers.{a}.{k}"] = [1, h, d, d]
        want[f"layers.{a}.w_b"] = [1, h, d, 4]
        want[f"layers.{a}.layer_norm.weight"] = [hd]
        want[f"layers.{a}.layer_norm.bias"] = [hd]
        want[f"layers.{a}.out_linear.weight"] = [hd, hd]
        want[f"layers.{b}.layer_norm.weight"] = [hd]
        want[f"layers.{b}.layer_norm.bias"] = [hd]
        want[f"layers.{b}.ff_layers.0.weight"] = [ff, hd]
        want[f"layers.{b}.ff_layers.0.bias"] = [ff]
        want[f"layers.{b}.ff_layers.3.weight"] = [hd, ff]
        want[f"layers.{b}.ff_layers.3.bias"] = [hd]
    want["out_layer.weight"] = [n, hd]
    want["out_layer.bias"] = [n]
    if cfg["feature_norm"] == "batch":
        want["feature_norm.running_mean"] = [f]
        want["feature_norm.running_var"] = [f]
    return want


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    opts = [a for a in argv if a.startswith("--")]
    if len(args) != 1 or any(o not in ("--acl", "--torch") for o in opts):
        print(__doc__, file=sys.stderr)
        return 2
    tensors, meta = read(args[0])
    for name, (dtype, shape, _) in tensors.items():
        print(f"{name} {dtype} {shape}")
    for k in meta:
        print(f"metadata {k} ({len(meta[k])} characters)")
    if "--acl" in opts:
        if "metacl.config" not in meta:
            fail("no metacl.config metadata: not an ACL export of metacl")
        cfg = dict(line.split(" = ", 1) for line in meta["metacl.config"].splitlines() if " = " in line)
        want = official(cfg)
        got = {name: shape for name, (_, shape, _) in tensors.items()}
        if got != want:
            missing = sorted(set(want) - set(got))
            extra = sorted(set(got) - set(want))
            bad = sorted(k for k in set(got) & set(want) if got[k] != want[k])
            fail(f"not the official names and shapes: missing {missing}, extra {extra}, other shape {bad}")
        print(f"ok: the {len(want)} official names and shapes, exactly")
    if "--torch" in opts:
        import torch  # only here: the reader above needs nothing but the standard library
        dt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
        sd = {name: torch.frombuffer(bytearray(raw), dtype=dt[dtype]).reshape(shape).float()
              for name, (dtype, shape, raw) in tensors.items()}
        print(f"ok: {len(sd)} torch tensors, {sum(t.numel() for t in sd.values())} values "
              "(load_state_dict(sd) into the official model; strict=False or drop "
              "feature_norm.* when it has no feature_norm module)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
