"""The file names inside the embedder's model folder.

A module of its own, free of ONNX Runtime and ``tokenizers``, so code that only checks a folder
(``hindsight up`` in the gateway image, which installs neither) can name them.
"""

MODEL_FILE = "model_int8.onnx"
# The same model without the attention mask's Adds, for runs without padding (provisioning writes it
# only if it gives the same vectors bit for bit).
UNMASKED_MODEL_FILE = "model_int8_unmasked.onnx"
TOKENIZER_FILE = "tokenizer.json"
PREPARE_FILE = "prepare.json"
