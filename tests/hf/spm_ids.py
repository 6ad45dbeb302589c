#!/usr/bin/python3
"""spm_ids.py -- the token ids SentencePiece itself gives for llama.cpp's tokenizer test
strings, the reference test_hf compares edgellm's SentencePiece import with.

usage: spm_ids.py TOKENIZER.model STRINGS.inp

STRINGS.inp is llama.cpp's format (../shared/data/vocab/ggml-vocab-*.gguf.inp): each string
followed by a line "__ggml_vocab_test__". Prints one line per string: its ids, space-separated,
from SentencePieceProcessor.encode (Debian's python3-sentencepiece; no BOS/EOS added).
tests/hf/llama2-spm.ids was made with
  /usr/bin/python3 tests/hf/spm_ids.py ../shared/models/llama2-tokenizer/tokenizer.model \
      ../shared/data/vocab/ggml-vocab-llama-spm.gguf.inp > tests/hf/llama2-spm.ids
(python3-sentencepiece 0.1.97-3+b1, Debian 12).
"""
import sys

import sentencepiece

if len(sys.argv) != 3:
    sys.exit(__doc__)
sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])
text = open(sys.argv[2], encoding="utf-8").read()
parts = text.split("\n__ggml_vocab_test__\n")
if parts and parts[-1] == "":
    parts.pop()
for s in parts:
    print(" ".join(str(i) for i in sp.encode(s)))
