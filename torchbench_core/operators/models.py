"""The models whose operator inputs are recorded, and a user's own through ``module:factory``.

The built-in ones come from transformers (a well-kept library of real model
definitions), built from their default configurations with random weights:
nothing is downloaded. Each is BERT-base, GPT-2 small, ViT-base or ResNet-50 as published,
at a batch this 2-core machine trains in seconds. A factory returns
``(model, inputs)``: ``inputs`` a tuple of positional arguments or a dict of
keyword arguments.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import torch

__all__ = ["MODELS", "load_factory"]

SEED = 0


def _transformers():
    try:
        import transformers
    except ImportError:
        raise RuntimeError("recording the built-in models needs transformers: pip install transformers") from None
    transformers.logging.set_verbosity_error()
    return transformers


def bert() -> tuple[torch.nn.Module, Any]:
    """BertForMaskedLM (bert-base-uncased's configuration), batch 2, 128 tokens, with labels (its loss)."""
    tf = _transformers()
    torch.manual_seed(SEED)
    config = tf.BertConfig(attn_implementation="eager")  # attention as its matmuls and softmax, as in PyTorch's logs
    model = tf.BertForMaskedLM(config).train()
    ids = torch.randint(0, config.vocab_size, (2, 128))
    return model, {"input_ids": ids, "labels": ids.clone()}


def gpt2() -> tuple[torch.nn.Module, Any]:
    """GPT2LMHeadModel (GPT-2 small, causal attention, tanh GELU), batch 2, 128 tokens, with labels."""
    tf = _transformers()
    torch.manual_seed(SEED)
    config = tf.GPT2Config(attn_implementation="eager")
    model = tf.GPT2LMHeadModel(config).train()
    ids = torch.randint(0, config.vocab_size, (2, 128))
    return model, {"input_ids": ids, "labels": ids.clone()}


def vit() -> tuple[torch.nn.Module, Any]:
    """ViTForImageClassification (ViT-base/16 at 224 pixels, 1000 classes), batch 2, with labels."""
    tf = _transformers()
    torch.manual_seed(SEED)
    config = tf.ViTConfig(num_labels=1000, attn_implementation="eager")
    model = tf.ViTForImageClassification(config).train()
    return model, {"pixel_values": torch.randn(2, 3, 224, 224), "labels": torch.randint(0, 1000, (2,))}


def resnet() -> tuple[torch.nn.Module, Any]:
    """ResNetForImageClassification (ResNet-50, 1000 classes), batch 2 at 224 pixels, with labels."""
    tf = _transformers()
    torch.manual_seed(SEED)
    config = tf.ResNetConfig(num_labels=1000)
    model = tf.ResNetForImageClassification(config).train()
    return model, {"pixel_values": torch.randn(2, 3, 224, 224), "labels": torch.randint(0, 1000, (2,))}


# log name -> factory; the logs are torchbench_core/operators/logs/<suite>/<name>_training.txt
MODELS: dict[str, dict[str, Callable[[], tuple[torch.nn.Module, Any]]]] = {
    "huggingface": {"BertForMaskedLM": bert, "GPT2LMHeadModel": gpt2, "ViTForImageClassification": vit, "ResNetForImageClassification": resnet},
}


def load_factory(spec: str) -> Callable[[], tuple[torch.nn.Module, Any]]:
    """``package.module:function`` -> the function (ValueError with the reason if it cannot be found)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{spec!r}: expected module:factory, such as mypkg.models:make_model")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"{spec!r}: cannot import {module_name}: {e}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{spec!r}: {module_name} has no callable {attribute}")
    return factory
