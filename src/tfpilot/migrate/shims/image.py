"""``tf.contrib.image``'s projective transforms (rotate, translate, transform), for TF1 code on TF 2.21.

contrib.image was removed with contrib in TF 2.0 (TensorFlow Addons' port ended in 2024). The kernel
itself is still in TensorFlow (``ImageProjectiveTransformV3``, what ``keras.layers.RandomRotation``
runs), so these helpers build the same 8-number transforms contrib built and run that kernel with
contrib's settings: zeros outside the image, NEAREST interpolation unless asked for BILINEAR; images
of rank 2, 3 or 4 as contrib took them.
"""

# --- emitted below ---
import tensorflow as _tf


class _tf1_image:
    """tf.contrib.image (removed in TF 2): rotate, translate, transform and their transform builders."""

    @staticmethod
    def _as_4d(images):
        images = _tf.convert_to_tensor(images)
        rank = images.shape.rank
        if rank == 2:
            return images[None, :, :, None], lambda out: out[0, :, :, 0]
        if rank == 3:
            return images[None], lambda out: out[0]
        if rank == 4:
            return images, lambda out: out
        raise TypeError("Images should have rank between 2 and 4.")

    @staticmethod
    def transform(images, transforms, interpolation="NEAREST", output_shape=None, name=None):
        with _tf.name_scope(name or "transform"):
            batch, restore = _tf1_image._as_4d(images)
            transforms = _tf.convert_to_tensor(transforms, _tf.float32)
            if transforms.shape.rank == 1:
                transforms = transforms[None]
            shape = _tf.shape(batch)[1:3] if output_shape is None else _tf.convert_to_tensor(output_shape, _tf.int32)
            out = _tf.raw_ops.ImageProjectiveTransformV3(
                images=batch,
                transforms=transforms,
                output_shape=shape,
                fill_value=_tf.constant(0.0, _tf.float32),
                interpolation=interpolation.upper(),
                fill_mode="CONSTANT",
            )
            return restore(out)

    @staticmethod
    def angles_to_projective_transforms(angles, image_height, image_width, name=None):
        with _tf.name_scope(name or "angles_to_projective_transforms"):
            angles = _tf.convert_to_tensor(angles, _tf.float32)
            if angles.shape.rank == 0:
                angles = angles[None]
            height = _tf.cast(image_height, _tf.float32)
            width = _tf.cast(image_width, _tf.float32)
            cos, sin = _tf.cos(angles), _tf.sin(angles)
            x_offset = ((width - 1) - (cos * (width - 1) - sin * (height - 1))) / 2.0
            y_offset = ((height - 1) - (sin * (width - 1) + cos * (height - 1))) / 2.0
            zeros = _tf.zeros([_tf.shape(angles)[0], 2], _tf.float32)
            return _tf.concat(
                [cos[:, None], -sin[:, None], x_offset[:, None], sin[:, None], cos[:, None], y_offset[:, None], zeros],
                1,
            )

    @staticmethod
    def rotate(images, angles, interpolation="NEAREST", name=None):
        """Counter-clockwise by `angles` radians (one, or one per image) about each image's centre."""
        with _tf.name_scope(name or "rotate"):
            batch, restore = _tf1_image._as_4d(images)
            shape = _tf.shape(batch)
            transforms = _tf1_image.angles_to_projective_transforms(angles, shape[1], shape[2])
            return restore(_tf1_image.transform(batch, transforms, interpolation=interpolation))

    @staticmethod
    def translations_to_projective_transforms(translations, name=None):
        with _tf.name_scope(name or "translations_to_projective_transforms"):
            translations = _tf.convert_to_tensor(translations, _tf.float32)
            if translations.shape.rank == 1:
                translations = translations[None]
            count = _tf.shape(translations)[0]
            ones, zeros = _tf.ones([count, 1]), _tf.zeros([count, 1])
            dx, dy = translations[:, 0:1], translations[:, 1:2]
            return _tf.concat([ones, zeros, -dx, zeros, ones, -dy, zeros, zeros], 1)

    @staticmethod
    def translate(images, translations, interpolation="NEAREST", name=None):
        """Shift by [dx, dy] pixels (one pair, or one per image)."""
        with _tf.name_scope(name or "translate"):
            transforms = _tf1_image.translations_to_projective_transforms(translations)
            return _tf1_image.transform(images, transforms, interpolation=interpolation)
