"""Q4_K and Q6_K quantizers for the GGUF writers (make_gguf_models.py,
make_gguf_pair.py): gguf-py 0.19 dequantizes the K-quants but cannot write
them. Plain min/max rounding, not llama.cpp's searched scales
(make_qkx2_quants): the blocks are valid ggml blocks, byte for byte as
kernels/quant/blocks.hpp draws them, and their error is a little above
llama.cpp's. Checked by round trip through gguf.quants.dequantize
(python3 tools/gguf_kquants.py).

  q4_k(x), q6_k(x): x float32 [..., k], k a multiple of 256 -> uint8 [..., k / 256 * bytes]
"""
import numpy as np

QK_K = 256


def _f16(values):
    return np.asarray(values, dtype=np.float32).astype(np.float16)


def _pack_scales_q4_k(sc, mn):
    """6-bit scales and mins [n, 8] -> the 12 packed bytes [n, 12]."""
    out = np.zeros(sc.shape[:-1] + (12,), dtype=np.uint8)
    for j in range(4):
        out[..., j] = (sc[..., j] & 63) | ((sc[..., j + 4] >> 4) << 6)
        out[..., j + 4] = (mn[..., j] & 63) | ((mn[..., j + 4] >> 4) << 6)
        out[..., j + 8] = (sc[..., j + 4] & 15) | ((mn[..., j + 4] & 15) << 4)
    return out


def q4_k(x):
    """x = d * sc * q - dmin * m per 32-element sub-block, q in 0..15."""
    x = np.asarray(x, dtype=np.float32)
    shape = x.shape
    blocks = x.reshape(-1, 8, 32)
    lo = np.minimum(blocks.min(axis=-1), 0.0)  # a sub-block's min, as -m * dmin
    hi = blocks.max(axis=-1)
    scale = (hi - lo) / 15.0
    d = _f16(scale.max(axis=-1) / 63.0)
    dmin = _f16(-lo.min(axis=-1) / 63.0)
    d32, dmin32 = d.astype(np.float32), dmin.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32[:, None] > 0, np.rint(scale / d32[:, None]), 0).clip(0, 63)
        mn = np.where(dmin32[:, None] > 0, np.rint(-lo / dmin32[:, None]), 0).clip(0, 63)
        step = d32[:, None] * sc
        offset = dmin32[:, None] * mn
        q = np.where(step[..., None] > 0,
                     np.rint((blocks + offset[..., None]) / step[..., None]), 0).clip(0, 15)
    q = q.astype(np.uint8)
    sc, mn = sc.astype(np.uint8), mn.astype(np.uint8)
    # Bytes 32k..32k+31 of qs: sub-block 2k low nibbles, 2k+1 high.
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(-1, 128)
    out = np.concatenate([d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2),
                          _pack_scales_q4_k(sc, mn), qs], axis=-1)
    return out.reshape(shape[:-1] + (shape[-1] // QK_K * 144,))


def q6_k(x):
    """x = d * sc * (q - 32) per 16-element sub-block, q in 0..63, sc int8."""
    x = np.asarray(x, dtype=np.float32)
    shape = x.shape
    blocks = x.reshape(-1, 16, 16)
    scale = np.abs(blocks).max(axis=-1) / 31.0
    d = _f16(scale.max(axis=-1) / 127.0)
    d32 = d.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32[:, None] > 0, np.rint(scale / d32[:, None]), 0).clip(-128, 127)
        step = d32[:, None] * sc
        q = np.where(step[..., None] != 0, np.rint(blocks / step[..., None]), 0).clip(-32, 31) + 32
    q = q.astype(np.uint8).reshape(-1, 2, 4, 32)  # [block, half, k, l]: element 128h + 32k + l
    ql = np.zeros((q.shape[0], 2, 64), dtype=np.uint8)
    qh = np.zeros((q.shape[0], 2, 32), dtype=np.uint8)
    for k in range(4):
        nib = q[:, :, k, :] & 15
        at = slice(32 * (k & 1), 32 * (k & 1) + 32)
        ql[:, :, at] |= nib << 4 if k >= 2 else nib
        qh[:, :, :] |= (q[:, :, k, :] >> 4) << (2 * k)
    out = np.concatenate([ql.reshape(-1, 128), qh.reshape(-1, 64),
                          sc.astype(np.int8).view(np.uint8), d.view(np.uint8).reshape(-1, 2)],
                         axis=-1)
    return out.reshape(shape[:-1] + (shape[-1] // QK_K * 210,))


def _self_check():
    import gguf

    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.02, (64, 512)).astype(np.float32)
    x[3] = 0  # an all-zero row
    for name, fn, kind in (("Q4_K", q4_k, gguf.GGMLQuantizationType.Q4_K),
                           ("Q6_K", q6_k, gguf.GGMLQuantizationType.Q6_K)):
        y = gguf.quants.dequantize(fn(x), kind)
        rel = np.abs(y - x).max() / np.abs(x).max()
        rms = np.sqrt(((y - x) ** 2).mean()) / np.sqrt((x ** 2).mean())
        print(f"{name}: max error {rel:.3g} of max |x|, rms error {rms:.3g} of rms x")
        assert np.all(y[3] == 0)
        assert rms < (0.12 if name == "Q4_K" else 0.03), rms


if __name__ == "__main__":
    _self_check()
