"""``tf.contrib.learn.preprocessing.VocabularyProcessor`` for TF1 text scripts.

The text-CNN and text-RNN tutorials of the TF1 era (and the many projects copied from them) map
documents to word ids with contrib's VocabularyProcessor; tf.contrib is gone in TF 2.x. This one
gives the same ids: TF1's tokenizer regex, id 0 for ``<UNK>`` and padding, ids in order of first
appearance, ``min_frequency`` trimming by descending count then word, documents cut or padded to
``max_document_length``. One difference, on purpose: ``save`` writes JSON and ``restore`` reads
it (TF1 pickled the object; loading a pickle runs code from the file), so a vocabulary saved by a
TF1 run must be rebuilt by running the migrated training once.
"""

# tfpilot: noqa-file[TFP6]
# --- emitted below ---
import json as _json
import re as _re

import numpy as _np


class _tf1_learn:
    """tf.contrib.learn (removed in TF 2): preprocessing.VocabularyProcessor."""

    class preprocessing:
        TOKENIZER_RE = _re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z][a-z]+(?=[A-Z])|[\'\w\-]+", _re.UNICODE)

        @staticmethod
        def tokenizer(documents):
            for document in documents:
                yield _tf1_learn.preprocessing.TOKENIZER_RE.findall(document)

        class CategoricalVocabulary:
            def __init__(self, unknown_token="<UNK>"):
                self._unknown_token = unknown_token
                self._mapping = {unknown_token: 0}
                self._freq = {}
                self._frozen = False

            def __len__(self):
                return len(self._mapping)

            def freeze(self, freeze=True):
                self._frozen = freeze

            def get(self, category):
                if category not in self._mapping:
                    if self._frozen:
                        return 0
                    self._mapping[category] = len(self._mapping)
                return self._mapping[category]

            def add(self, category, count=1):
                if self.get(category) > 0:
                    self._freq[category] = self._freq.get(category, 0) + count

            def trim(self, min_frequency, max_frequency=-1):
                ordered = sorted(sorted(self._freq.items()), key=lambda item: item[1], reverse=True)
                self._mapping = {self._unknown_token: 0}
                kept = {}
                for category, count in ordered:
                    if 0 < max_frequency <= count:
                        continue
                    if count <= min_frequency:
                        break
                    self._mapping[category] = len(self._mapping)
                    kept[category] = count
                self._freq = kept

            def state(self):
                return {"unknown_token": self._unknown_token, "mapping": self._mapping, "freq": self._freq}

            @classmethod
            def from_state(cls, state):
                vocabulary = cls(state["unknown_token"])
                vocabulary._mapping, vocabulary._freq = dict(state["mapping"]), dict(state["freq"])
                vocabulary.freeze()
                return vocabulary

            def reverse(self, class_id):
                for category, index in self._mapping.items():
                    if index == class_id:
                        return category
                raise ValueError(f"no category with id {class_id}")

        class VocabularyProcessor:
            def __init__(self, max_document_length, min_frequency=0, vocabulary=None, tokenizer_fn=None):
                self.max_document_length = max_document_length
                self.min_frequency = min_frequency
                self.vocabulary_ = vocabulary or _tf1_learn.preprocessing.CategoricalVocabulary()
                self._tokenizer = tokenizer_fn or _tf1_learn.preprocessing.tokenizer

            def fit(self, raw_documents, unused_y=None):
                for tokens in self._tokenizer(raw_documents):
                    for token in tokens:
                        self.vocabulary_.add(token)
                if self.min_frequency > 0:
                    self.vocabulary_.trim(self.min_frequency)
                self.vocabulary_.freeze()
                return self

            def fit_transform(self, raw_documents, unused_y=None):
                raw_documents = list(raw_documents)  # read twice: a generator would be empty the second time
                self.fit(raw_documents)
                return self.transform(raw_documents)

            def transform(self, raw_documents):
                for tokens in self._tokenizer(raw_documents):
                    word_ids = _np.zeros(self.max_document_length, _np.int64)
                    for index, token in enumerate(tokens[: self.max_document_length]):
                        word_ids[index] = self.vocabulary_.get(token)
                    yield word_ids

            def reverse(self, documents):
                for word_ids in documents:
                    yield " ".join(self.vocabulary_.reverse(int(i)) for i in word_ids)

            def save(self, filename):
                state = {
                    "max_document_length": self.max_document_length,
                    "min_frequency": self.min_frequency,
                    "vocabulary": self.vocabulary_.state(),
                }
                with open(filename, "w", encoding="utf-8") as handle:
                    _json.dump(state, handle)

            @classmethod
            def restore(cls, filename):
                try:
                    with open(filename, encoding="utf-8") as handle:
                        state = _json.load(handle)
                except (UnicodeDecodeError, ValueError) as error:
                    raise ValueError(
                        f"{filename} is no vocabulary saved by the migrated VocabularyProcessor (JSON): a TF1 "
                        "pickle is not loaded (it can run code); run the migrated training once to save it again"
                    ) from error
                vocabulary = _tf1_learn.preprocessing.CategoricalVocabulary.from_state(state["vocabulary"])
                return cls(state["max_document_length"], state["min_frequency"], vocabulary)
