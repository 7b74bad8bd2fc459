"""``scipy.misc``'s image functions (imread, imsave, imresize, toimage, fromimage, bytescale), which SciPy
removed in 1.2-1.3, for the TF1 programs that load and save their images with them.

They were thin wrappers of PIL (Pillow); these do what SciPy 1.1 did: ``imread(flatten=True)`` reads PIL's
"F" luminance (float32); ``toimage`` / ``imsave`` rescale any array that is not uint8 linearly from its own
minimum and maximum to 0-255 (SciPy's ``bytescale``: a GAN's tanh outputs in [-1, 1] are saved as full-range
images); ``imresize`` returns uint8 as SciPy did, a size in percent for an int, a fraction for a float, else
(height, width). Pillow is needed at run time (as SciPy needed it).
"""

# --- emitted below ---
import numpy as _np


class _tf1_scipy_misc:
    """scipy.misc image functions (removed in SciPy 1.3): imread, imsave, imresize, toimage, fromimage, bytescale."""

    @staticmethod
    def bytescale(data, cmin=None, cmax=None, high=255, low=0):
        data = _np.asarray(data)
        if data.dtype == _np.uint8:
            return data
        cmin = data.min() if cmin is None else cmin
        cmax = data.max() if cmax is None else cmax
        scale = float(high - low) / ((cmax - cmin) or 1)
        return ((data * 1.0 - cmin) * scale + low).clip(low, high).__add__(0.5).astype(_np.uint8)

    @staticmethod
    def toimage(arr, high=255, low=0, cmin=None, cmax=None, pal=None, mode=None, channel_axis=None):
        from PIL import Image

        data = _np.asarray(arr)
        if data.ndim == 3 and channel_axis is not None and channel_axis != 2:
            data = _np.moveaxis(data, channel_axis, 2)
        if mode == "F":
            return Image.fromarray(data.astype(_np.float32), mode="F")
        if data.ndim == 3 and data.shape[2] == 1:
            data = data[:, :, 0]
        scaled = _tf1_scipy_misc.bytescale(data, cmin=cmin, cmax=cmax, high=high, low=low)
        if scaled.ndim == 2:
            return Image.fromarray(scaled, mode="L")
        return Image.fromarray(scaled, mode={3: "RGB", 4: "RGBA"}[scaled.shape[2]])

    @staticmethod
    def fromimage(im, flatten=False, mode=None):
        if mode is not None:
            im = im.convert(mode)
        elif flatten:
            im = im.convert("F")
        return _np.array(im)

    @staticmethod
    def imread(name, flatten=False, mode=None):
        from PIL import Image

        with Image.open(name) as im:
            return _tf1_scipy_misc.fromimage(im, flatten=flatten, mode=mode)

    @staticmethod
    def imsave(name, arr, format=None):
        _tf1_scipy_misc.toimage(arr, channel_axis=2).save(name, format=format)

    @staticmethod
    def imresize(arr, size, interp="bilinear", mode=None):
        im = _tf1_scipy_misc.toimage(arr, mode=mode)
        if isinstance(size, (int, _np.integer)):
            size = tuple((_np.array(im.size) * (size / 100.0)).astype(int))
        elif isinstance(size, (float, _np.floating)):
            size = tuple((_np.array(im.size) * size).astype(int))
        else:
            size = (size[1], size[0])
        resample = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3, "cubic": 3}[interp]
        return _tf1_scipy_misc.fromimage(im.resize(size, resample=resample))
