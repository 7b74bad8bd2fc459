"""``tf.contrib.lookup``'s vocabulary tables for TF1 graph code on TF 2.21.

TF1 NLP scripts map words to ids with ``tf.contrib.lookup.index_table_from_file`` (and back with
``index_to_string_table_from_file``), then run ``tf.tables_initializer()``. tf.contrib is gone;
the same tables are built here from TF 2.21's public ``tf.compat.v1.lookup`` classes: a text-file
initializer (one key per line, the line number its id) in a ``StaticHashTable``, or, with OOV
buckets, a ``StaticVocabularyTable``, which hashes unknown keys with the same fingerprint64 TF1's
``IdTableWithHashBuckets`` used, so the ids are TF1's. In a graph the tables still register with
``tf.tables_initializer()``. A ``hasher_spec`` other than TF1's default (a keyed strong hash) is
refused by name (TF 2.21's tables have no hasher option): the OOV ids would differ.
"""

# tfpilot: noqa-file[TFP6]

# --- emitted below ---
import tensorflow as _tf

from tfpilot.migrate.shims.refusal import TF1OptionRefused


class _tf1_lookup:
    """tf.contrib.lookup (removed in TF 2): vocabulary tables on tf.compat.v1.lookup."""

    HashTable = _tf.compat.v1.lookup.StaticHashTable
    KeyValueTensorInitializer = _tf.compat.v1.lookup.KeyValueTensorInitializer
    TextFileInitializer = _tf.compat.v1.lookup.TextFileInitializer
    TextFileIndex = _tf.compat.v1.lookup.TextFileIndex

    @staticmethod
    def index_table_from_file(
        vocabulary_file=None,
        num_oov_buckets=0,
        vocab_size=None,
        default_value=-1,
        hasher_spec=None,
        key_dtype=_tf.string,
        name=None,
        key_column_index=-2,
        value_column_index=-1,
        delimiter="\t",
    ):
        if hasher_spec is not None:
            raise TF1OptionRefused("the migrated index_table_from_file hashes OOV keys with TF1's default only")
        initializer = _tf.compat.v1.lookup.TextFileInitializer(
            vocabulary_file, key_dtype, key_column_index, _tf.int64, value_column_index,
            vocab_size=vocab_size, delimiter=delimiter,
        )  # fmt: skip
        if num_oov_buckets:
            return _tf.compat.v1.lookup.StaticVocabularyTable(initializer, num_oov_buckets, name=name)
        return _tf.compat.v1.lookup.StaticHashTable(initializer, default_value, name=name)

    @staticmethod
    def index_table_from_tensor(
        vocabulary_list, num_oov_buckets=0, default_value=-1, hasher_spec=None, dtype=_tf.string, name=None
    ):
        if hasher_spec is not None:
            raise TF1OptionRefused("the migrated index_table_from_tensor hashes OOV keys with TF1's default only")
        keys = _tf.convert_to_tensor(vocabulary_list, dtype=dtype)
        ids = _tf.range(_tf.size(keys, out_type=_tf.int64), dtype=_tf.int64)
        initializer = _tf.compat.v1.lookup.KeyValueTensorInitializer(keys, ids)
        if num_oov_buckets:
            return _tf.compat.v1.lookup.StaticVocabularyTable(initializer, num_oov_buckets, name=name)
        return _tf.compat.v1.lookup.StaticHashTable(initializer, default_value, name=name)

    @staticmethod
    def index_to_string_table_from_file(
        vocabulary_file, vocab_size=None, default_value="UNK", name=None, key_column_index=-1, value_column_index=-2,
        delimiter="\t",
    ):  # fmt: skip
        initializer = _tf.compat.v1.lookup.TextFileInitializer(
            vocabulary_file, _tf.int64, key_column_index, _tf.string, value_column_index,
            vocab_size=vocab_size, delimiter=delimiter,
        )  # fmt: skip
        return _tf.compat.v1.lookup.StaticHashTable(initializer, default_value, name=name)
