"""``tensorflow.examples.tutorials.mnist.input_data`` (removed in TF 2) from a local copy.

TF1's loader downloaded four idx files on first use. Migrated code must not reach the network at
run time, so this helper reads a file that is already on disk, looking in this order:

1. the file named by the ``TFPILOT_MNIST`` environment variable (a ``mnist.npz``),
2. ``TRAIN_DIR/mnist.npz``,
3. TF1's own four files in TRAIN_DIR (``train-images-idx3-ubyte.gz`` ...), what an earlier run of
   the TF1 script left there,
4. ``~/.keras/datasets/mnist.npz``, Keras' cache (``keras.datasets.mnist.load_data()`` fills it).

``read_data_sets`` keeps TF1's behaviour: the first ``validation_size`` training images become the
validation split, images are float32 in [0, 1] flattened to 784 values, labels are integers or
one-hot float64 rows, and ``next_batch`` shuffles every epoch and wraps across epoch boundaries.
"""

# These helpers are TF1 graph code on purpose (they stand in for removed TF1 APIs).
# tfpilot: noqa-file[TFP6]

# --- emitted below ---
import gzip as _gzip
import os as _os

import numpy as _np


class _tf1_mnist:
    """tensorflow.examples.tutorials.mnist.input_data.read_data_sets, reading a local MNIST copy."""

    _IDX_FILES = (
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    )

    class DataSet:
        def __init__(self, images, labels, dtype=_np.float32, reshape=True, seed=None):
            images = _np.asarray(images)
            if images.ndim == 3:  # (count, rows, columns) -> TF1's (count, rows, columns, 1)
                images = images[..., None]
            if reshape:
                images = images.reshape(images.shape[0], int(_np.prod(images.shape[1:])))
            if _np.dtype(getattr(dtype, "as_numpy_dtype", dtype)) == _np.float32:  # tf.float32 or np.float32
                # TF1's arithmetic: a product with 1/255 (division rounds some pixels one float32 step
                # away, and a seeded 250-step run drifted by 2% of its loss)
                images = _np.multiply(images.astype(_np.float32), 1.0 / 255.0)
            self._images = images
            self._labels = _np.asarray(labels)
            self._num_examples = images.shape[0]
            self._epochs_completed = 0
            self._index_in_epoch = 0
            # TF >= 1.4's DataSet seeded NumPy's global generator from TensorFlow's seeds when it was made
            # (numpy.random.seed of the graph-level seed, or of the op-level one when a seed is passed), and every
            # next_batch shuffle drew from it: a script that sets tf.set_random_seed(777) gets the same batches
            # on every run, and one that sets none gets a fresh order each run, as it did in TF1.
            _np.random.seed(_tf1_mnist._graph_seed() if seed is None else seed)

        images = property(lambda self: self._images)
        labels = property(lambda self: self._labels)
        num_examples = property(lambda self: self._num_examples)
        epochs_completed = property(lambda self: self._epochs_completed)

        def _shuffle(self):
            order = _np.random.permutation(self._num_examples)
            self._images = self._images[order]
            self._labels = self._labels[order]

        def next_batch(self, batch_size, fake_data=False, shuffle=True):
            if fake_data:
                raise ValueError("fake_data is not supported by the migrated MNIST loader")
            if shuffle and self._epochs_completed == 0 and self._index_in_epoch == 0:
                self._shuffle()
            start = self._index_in_epoch
            if start + batch_size <= self._num_examples:
                self._index_in_epoch = start + batch_size
                return self._images[start : start + batch_size], self._labels[start : start + batch_size]
            # The batch runs past the end of the epoch: finish this epoch, then start the next.
            head_images, head_labels = self._images[start:], self._labels[start:]
            self._epochs_completed += 1
            if shuffle:
                self._shuffle()
            self._index_in_epoch = batch_size - len(head_images)
            tail = slice(0, self._index_in_epoch)
            return (
                _np.concatenate([head_images, self._images[tail]], axis=0),
                _np.concatenate([head_labels, self._labels[tail]], axis=0),
            )

    class Datasets:
        def __init__(self, train, validation, test):
            self.train, self.validation, self.test = train, validation, test

    @staticmethod
    def _graph_seed():
        """The graph-level seed in force (None when none was set). In graph mode (compat-migrated code) it is
        read from the graph, not through tf.compat.v1.get_seed: in TF 2.x each get_seed call advances the
        counter that gives later random ops their op seeds, so three DataSets would change every initial
        weight of a seeded script (TF1's get_seed only read the graph). Eager code has no public getter for the
        seed, and its op seeds never followed TF1's: get_seed there."""
        try:
            import tensorflow as _tf
        except ImportError:  # no TensorFlow: what TF1 did with no seed set
            return None
        if not _tf.executing_eagerly():
            return _tf.compat.v1.get_default_graph().seed
        return _tf.compat.v1.get_seed(None)[0]

    @staticmethod
    def _read_idx(path):
        with _gzip.open(path, "rb") as stream:
            data = stream.read()
        dimensions = data[3]
        shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dimensions))
        return _np.frombuffer(data, dtype=_np.uint8, offset=4 + 4 * dimensions).reshape(shape)

    @staticmethod
    def _load(train_dir):
        candidates = [_os.environ.get("TFPILOT_MNIST", ""), _os.path.join(train_dir, "mnist.npz")]
        for path in candidates:
            if path and _os.path.isfile(path):
                with _np.load(path) as arrays:
                    return arrays["x_train"], arrays["y_train"], arrays["x_test"], arrays["y_test"]
        idx_paths = [_os.path.join(train_dir, name) for name in _tf1_mnist._IDX_FILES]
        if all(_os.path.isfile(path) for path in idx_paths):
            return tuple(_tf1_mnist._read_idx(path) for path in idx_paths)
        cache = _os.path.join(_os.path.expanduser("~"), ".keras", "datasets", "mnist.npz")
        if _os.path.isfile(cache):
            with _np.load(cache) as arrays:
                return arrays["x_train"], arrays["y_train"], arrays["x_test"], arrays["y_test"]
        raise FileNotFoundError(
            f"MNIST not found: set TFPILOT_MNIST to a mnist.npz, or put mnist.npz (or TF1's four idx .gz "
            f"files) in {train_dir!r}, or run keras.datasets.mnist.load_data() once online to fill {cache!r}"
        )

    @staticmethod
    def read_data_sets(
        train_dir,
        fake_data=False,
        one_hot=False,
        dtype=_np.float32,
        reshape=True,
        validation_size=5000,
        seed=None,
        source_url=None,
    ):
        if fake_data:
            raise ValueError("fake_data is not supported by the migrated MNIST loader")
        x_train, y_train, x_test, y_test = _tf1_mnist._load(train_dir)
        if not 0 <= validation_size <= len(x_train):
            raise ValueError(f"validation_size should be between 0 and {len(x_train)}, got {validation_size}")

        def labels(values):
            values = _np.asarray(values).astype(_np.int64).reshape(-1)
            if not one_hot:
                return values.astype(_np.uint8)
            rows = _np.zeros((len(values), 10))
            rows[_np.arange(len(values)), values] = 1.0
            return rows

        def split(images, values):
            return _tf1_mnist.DataSet(images, labels(values), dtype=dtype, reshape=reshape, seed=seed)

        return _tf1_mnist.Datasets(
            train=split(x_train[validation_size:], y_train[validation_size:]),
            validation=split(x_train[:validation_size], y_train[:validation_size]),
            test=split(x_test, y_test),
        )

    @staticmethod
    def load_dataset(name, size="small", test_with_fake_data=False):
        """tf.contrib.learn.datasets.load_dataset: only "mnist" (TF1 read it from ./MNIST-data, integer labels)."""
        if name != "mnist":
            raise ValueError(f"the migrated load_dataset reads MNIST only, got {name!r}; load {name!r} yourself")
        return _tf1_mnist.read_data_sets("MNIST-data")
